// Per-call balancing by an outbound sidecar over the cluster DNS: the client
// pod's app keeps one HTTP/2 connection, to its own outbound sidecar, which
// resolves the headless Service's name at the node's dnsmasq and picks a pod for
// every call. The pods' inbound sidecars, the outbound sidecar's per-endpoint
// series and the client's own tally agree; then a pod leaves the endpoints
// (its readiness fails) and no call is lost.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sum, sumBy } from '../support/metrics-text.ts';
import { Cluster, SIDECAR_PORT, type OutboundSidecar } from './cluster.ts';
import { namespacesRefused } from './netns.ts';
import { perCode, perPod, skew } from './tally.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

describe('an outbound sidecar balancing over the headless Service\'s DNS records', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    // The manifests' --drain-delay (5s there; shorter here, still past the probe, the DNS change and the resolve interval).
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--drain-delay', '2s'] });
    outbound = await cluster.startOutbound(['--balance', 'round_robin', '--resolve-interval', '500ms']);
  });
  after(async () => {
    await cluster?.stop();
  });

  test('one client connection, every call balanced: an even spread, and every count agrees', { timeout: 60_000 }, async () => {
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 300, concurrency: 4 });
    assert.deepEqual(perCode(tally), { OK: 300 });
    const answered = perPod(tally);
    assert.ok(skew(answered, cluster.pods.map((p) => p.name)) < 1.05, `round robin over 3 pods: ${JSON.stringify(answered)}`);
    const perEndpoint = sumBy(await outbound.scrape(), 'rpcscope_upstream_calls_total', ['upstream']);
    assert.deepEqual(perEndpoint, Object.fromEntries(cluster.pods.map((p) => [`${p.ip}:${SIDECAR_PORT}`, answered[p.name]])));
    for (const pod of cluster.pods) assert.equal(sum(await cluster.scrape(pod), 'rpcscope_calls_total', { direction: 'inbound' }), answered[pod.name], pod.name);
    const view = await outbound.debugConnections();
    assert.equal(view.downstream.connections, 1, 'the app holds one connection');
    assert.deepEqual((view.endpoints as { state: string }[]).map((e) => e.state), ['ready', 'ready', 'ready']);
  });

  test('a pod whose readiness fails leaves DNS and gets no new call; none is lost', { timeout: 60_000 }, async () => {
    const [, leaving] = cluster.pods;
    const load = cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 200, concurrency: 4, durationMs: 6000, delayMs: 20 });
    await sleep(2000);
    // The deletion a rolling update starts with: out of the endpoints at once, while its sidecar drains.
    const restarted = cluster.restartPod(leaving!.name, 2000);
    const tally = await load;
    await restarted;
    assert.deepEqual(perCode(tally), { OK: 200 });
    assert.ok((perPod(tally)[leaving!.name] ?? 0) > 0, 'it had calls before');
    await cluster.waitReady(cluster.pods.map((p) => p.name));
  });
});
