// A rolling restart of every pod behind the Service, as a Deployment's rollout
// does it with the manifests' settings: each pod leaves the endpoints (kube-proxy
// rules and DNS) as it is deleted, its sidecar keeps serving for --drain-delay
// while that spreads, then drains; the app's preStop sleeps as long; the new
// pod joins when its readiness passes. Callers through the Service VIP (one
// gRPC connection, DNAT-ed) and through an outbound sidecar (DNS, per call)
// lose no call.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, SERVICE, type OutboundSidecar } from './cluster.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { namespacesRefused } from './netns.ts';
import { failures, perCode, perPod } from './tally.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

/** The manifests give 5 s; here 2 s, still past the probe period × threshold (0.5 s), dnsmasq's reload and the 500 ms resolve interval. */
const DRAIN_DELAY_MS = 2000;

describe('a rolling restart behind a DNAT Service', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--drain-delay', `${DRAIN_DELAY_MS}ms`, '--keepalive-interval', '1s', '--keepalive-timeout', '1s'] });
    outbound = await cluster.startOutbound(['--balance', 'round_robin', '--resolve-interval', '500ms', '--keepalive-interval', '1s', '--keepalive-timeout', '1s']);
  });
  after(async () => {
    await cluster?.stop();
  });

  test('every pod restarted in turn: zero failed calls through the VIP and through the outbound sidecar', { timeout: 120_000 }, async () => {
    const pids = cluster.pods.map((p) => p.sidecar.pid);
    const loadStarted = Date.now();
    const viaVip = cluster.client.load({ target: `${SERVICE.vip}:${SERVICE.port}`, protocol: 'grpc', calls: 800, concurrency: 4, durationMs: 24_000, delayMs: 20 });
    const viaOutbound = cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 800, concurrency: 4, durationMs: 24_000, delayMs: 20 });
    await sleep(1500);
    const restarts: string[] = [];
    const restartTimes: number[] = [];
    for (const pod of cluster.pods) {
      restartTimes.push(Date.now() - loadStarted);
      const { sidecarExit } = await cluster.restartPod(pod.name, DRAIN_DELAY_MS);
      restarts.push(`${pod.name} exit ${sidecarExit}`);
      await cluster.waitReady(cluster.pods.map((p) => p.name), 15_000);
    }
    const [vip, out] = await Promise.all([viaVip, viaOutbound]);
    await cluster.client.closeClients();
    const scenario = `rolling restart of ${cluster.pods.length} pods, --drain-delay and preStop ${DRAIN_DELAY_MS / 1000} s`;
    reportFigure({ section: 'network-faults', scenario, name: 'calls through the Service VIP (one grpc-js connection), per pod', value: `${JSON.stringify(perCode(vip))} ${JSON.stringify(perPod(vip))}` });
    reportFigure({ section: 'network-faults', scenario, name: 'calls through an outbound sidecar (DNS, per call), per pod', value: `${JSON.stringify(perCode(out))} ${JSON.stringify(perPod(out))}` });
    reportFigure({ section: 'network-faults', scenario, name: 'calls lost', value: 2 * 800 - (perCode(vip).OK ?? 0) - (perCode(out).OK ?? 0), unit: 'calls' });
    assert.deepEqual(perCode(vip), { OK: 800 }, `through the Service VIP; failed calls (restarts at ${restartTimes.join(', ')} ms):\n${failures(vip)}`);
    assert.deepEqual(perCode(out), { OK: 800 }, `through the outbound sidecar; failed calls (restarts at ${restartTimes.join(', ')} ms):\n${failures(out)}`);
    assert.deepEqual(restarts.map((r) => r.split(' exit ')[1]), ['0', '0', '0'], 'each sidecar drained and exited 0');
    assert.ok(cluster.pods.every((p, i) => p.sidecar.pid !== pids[i]), 'every pod was replaced');
    // The VIP's one connection moved with the GOAWAYs: more than one pod answered it.
    assert.ok(Object.keys(perPod(vip)).length >= 2, `the VIP client followed the restarts: ${JSON.stringify(perPod(vip))}`);
  });
});
