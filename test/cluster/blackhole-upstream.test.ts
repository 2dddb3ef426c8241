// A pod that vanishes from the network (its node's packets dropped both ways:
// no FIN, no RST) behind an outbound sidecar, on its default data plane (the
// balanced relay) or on the terminating one (RPCSCOPE_OUTBOUND_DATA_PLANE). Its
// PING keepalive finds the pooled connection dead: the calls in flight on it end
// UNAVAILABLE (gRPC) or 503 (REST) instead of hanging to their deadline, the
// endpoint is ejected so new calls go to the other pods, and it comes back once
// a connection to it can be made again. The vanished pod's own sidecar, on its
// side, finds the outbound sidecar's connection dead and drops it from its
// gauges. Then the same with the connections idle in the pool.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sum } from '../support/metrics-text.ts';
import type { CallTally } from './agent-protocol.ts';
import { Cluster, SIDECAR_PORT, type OutboundSidecar } from './cluster.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { namespacesRefused } from './netns.ts';
import { longest, perCode, perPod, slowest } from './tally.ts';
import { DETECT_MS, KEEPALIVE, SLACK_MS, endpointState, until } from './waits.ts';

const refused = await namespacesRefused();
/** The outbound sidecar's data plane, as the figures name it. */
const PLANE = process.env.RPCSCOPE_OUTBOUND_DATA_PLANE === 'terminate' ? 'terminating' : 'balanced relay';
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

describe('an upstream pod blackholed behind an outbound sidecar', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--data-plane', 'terminate', '--drain-delay', '2s', ...KEEPALIVE] });
    // HTTP/2 toward the pods for REST callers too (HTTP/1.1 is blackhole-upstream-h1.test.ts).
    outbound = await cluster.startOutbound(['--balance', 'round_robin', '--resolve-interval', '500ms', '--connect-timeout', '1s', '--upstream-protocol', 'http2', ...KEEPALIVE]);
  });
  after(async () => {
    await cluster?.stop();
  });

  test('calls in flight on it end UNAVAILABLE / 503 within the keepalive timeout, new calls go elsewhere, and it comes back', { timeout: 90_000 }, async () => {
    const victim = cluster.pods[1]!;
    const address = `${victim.ip}:${SIDECAR_PORT}`;
    // About 14 s of calls, each 300 ms at the pod, so that some are always in flight on the victim.
    const grpc = cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 240, concurrency: 6, durationMs: 14_000, delayMs: 300, deadlineMs: 10_000 });
    const rest = cluster.client.load({ target: outbound.target, protocol: 'rest', calls: 90, concurrency: 3, durationMs: 14_000, delayMs: 300, deadlineMs: 10_000 });
    await sleep(3000);
    const blackholedAt = Date.now();
    await cluster.blackhole(victim.ip);
    const ejectedAfter = await until('the endpoint ejected', DETECT_MS + SLACK_MS + 2000, async () => (await endpointState(outbound, address)) !== 'ready');
    // The victim's own sidecar (asked over IPC, which no blackhole stops) drops the vanished client too.
    const ghostFreeAfter = await until('the victim\'s sidecar without the vanished client', DETECT_MS + SLACK_MS + 2000, async () => {
      const m = await cluster.scrape(victim);
      return sum(m, 'rpcscope_connections_active', { side: 'downstream' }) === 0 && sum(m, 'rpcscope_calls_active') === 0;
    });
    await sleep(Math.max(0, 9000 - (Date.now() - blackholedAt)));
    const healedAt = Date.now();
    await cluster.heal(victim.ip);
    const [g, r] = await Promise.all([grpc, rest]);
    const scenario = `upstream pod blackholed under load, outbound sidecar (${PLANE}) speaking HTTP/2 to the pods`;
    reportFigure({ section: 'network-faults', scenario, name: 'detection (blackhole to endpoint ejected)', value: ejectedAfter, unit: 'ms' });
    reportFigure({ section: 'network-faults', scenario, name: 'the vanished pod\'s sidecar free of its ghost client', value: ghostFreeAfter, unit: 'ms' });
    reportFigure({ section: 'network-faults', scenario, name: 'gRPC calls answered', value: JSON.stringify(perCode(g)) });
    reportFigure({ section: 'network-faults', scenario, name: 'REST calls answered', value: JSON.stringify(perCode(r)) });
    reportFigure({ section: 'network-faults', scenario, name: 'longest call (deadline 10 s; 300 ms of service time)', value: Math.max(longest(g), longest(r)), unit: 'ms' });

    // No call hung: every one ended well inside its 10 s deadline.
    const slowestCalls = `gRPC ${slowest(g, blackholedAt)}; REST ${slowest(r, blackholedAt)} (times after the blackhole; ejected at ${ejectedAfter} ms, healed at ${healedAt - blackholedAt} ms)`;
    assert.ok(longest(g) < DETECT_MS + SLACK_MS + 300 && longest(r) < DETECT_MS + SLACK_MS + 300, `longest call ${longest(g)} ms (gRPC), ${longest(r)} ms (REST): ${slowestCalls}`);
    assert.deepEqual(Object.keys(perCode(g)).filter((c) => c !== 'OK' && c !== 'UNAVAILABLE'), [], `gRPC codes ${JSON.stringify(perCode(g))}`);
    assert.deepEqual(Object.keys(perCode(r)).filter((c) => c !== '200' && c !== '503'), [], `REST codes ${JSON.stringify(perCode(r))}`);
    const failed: CallTally[] = [...g.filter((t) => t.code !== 'OK'), ...r.filter((t) => t.code !== '200')];
    assert.ok(failed.length > 0, 'calls were in flight on the victim when it vanished');
    for (const t of failed) {
      assert.ok(t.start < blackholedAt + DETECT_MS + SLACK_MS, `a call started ${t.start - blackholedAt} ms after the blackhole failed: new calls go elsewhere`);
      assert.ok(t.end < blackholedAt + DETECT_MS + SLACK_MS, `a failed call ended ${t.end - blackholedAt} ms after the blackhole`);
    }
    // Between its ejection and the heal, the victim answered nothing.
    const during = [...g, ...r].filter((t) => t.start > blackholedAt + DETECT_MS + SLACK_MS && t.end < healedAt);
    assert.ok(during.length > 50, `calls while it was out: ${during.length}`);
    assert.deepEqual(perPod(during)[victim.name], undefined);

    const m = await outbound.scrape();
    assert.ok(sum(m, 'rpcscope_keepalive_timeouts_total', { side: 'upstream' }) >= 1, 'the outbound sidecar counted the unanswered PING');
    assert.ok(sum(m, 'rpcscope_upstream_ejections_total', { reason: 'keepalive_timeout' }) >= 1, 'and the ejection');
    assert.ok(sum(await cluster.scrape(victim), 'rpcscope_keepalive_timeouts_total', { side: 'downstream' }) >= 1, 'the victim\'s sidecar counted its vanished client');

    // Back: once a connection can be made again, it is in rotation and answers its share.
    const backAfter = await until('the endpoint back in rotation', 35_000, async () => (await endpointState(outbound, address)) === 'ready');
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 30, concurrency: 3 });
    assert.deepEqual(perCode(tally), { OK: 30 });
    assert.ok((perPod(tally)[victim.name] ?? 0) >= 8, `the victim answers again: ${JSON.stringify(perPod(tally))}`);
    assert.equal(sum(await outbound.scrape(), 'rpcscope_upstream_ejected_endpoints'), 0);
    reportFigure({ section: 'network-faults', scenario: `upstream pod blackholed under load, outbound sidecar (${PLANE}) speaking HTTP/2 to the pods`, name: 'back in rotation after the heal', value: backAfter, unit: 'ms' });
  });

  test('an idle pooled connection to a vanished pod is found and its endpoint ejected before a call needs it', { timeout: 60_000 }, async () => {
    // Every pod has a pooled connection from the test before.
    const victim = cluster.pods[2]!;
    const before = sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' });
    await cluster.blackhole(victim.ip);
    const found = await until('the idle connection found dead', DETECT_MS + SLACK_MS + 2000, async () => sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' }) > before);
    assert.equal(await endpointState(outbound, `${victim.ip}:${SIDECAR_PORT}`).then((s) => s !== 'ready'), true, 'ejected');
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 60, concurrency: 3, deadlineMs: 5000 });
    await cluster.heal(victim.ip);
    reportFigure({ section: 'network-faults', scenario: 'idle pooled connection to a blackholed pod', name: 'found dead and ejected, before any call', value: found, unit: 'ms' });
    assert.deepEqual(perCode(tally), { OK: 60 });
    assert.equal(perPod(tally)[victim.name], undefined, 'no call sent to it');
    assert.ok(longest(tally) < 1000, `no call waited on it: longest ${longest(tally)} ms`);
  });
});
