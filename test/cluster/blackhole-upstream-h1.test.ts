// A pod that vanishes from the network (its packets dropped both ways: no FIN,
// no RST) behind an outbound sidecar that speaks HTTP/1.1 to the pods. HTTP/1.1
// has no PING: the sidecar notices an endpoint whose connections read nothing
// for --keepalive-interval while calls wait on them, and a TCP connection to it
// that is not made within --keepalive-timeout (sidecar/src/upstream/h1-liveness.ts).
// The REST calls waiting on the vanished pod are answered 503 then, instead of
// waiting for their deadline; the endpoint is ejected, so new calls go to the
// other pods, and it is back once it answers again.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sum } from '../support/metrics-text.ts';
import { Cluster, SIDECAR_PORT, type OutboundSidecar } from './cluster.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { namespacesRefused } from './netns.ts';
import { longest, perCode, perPod, slowest } from './tally.ts';
import { DETECT_MS, KEEPALIVE, SLACK_MS, endpointState, until } from './waits.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

describe('an upstream pod blackholed behind an outbound sidecar speaking HTTP/1.1', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--data-plane', 'terminate', ...KEEPALIVE] });
    outbound = await cluster.startOutbound(['--balance', 'round_robin', '--resolve-interval', '500ms', '--connect-timeout', '1s', '--upstream-protocol', 'http1', ...KEEPALIVE]);
  });
  after(async () => {
    await cluster?.stop();
  });

  test('REST calls waiting on it end 503 within the keepalive timeout, new calls go elsewhere, and it comes back', { timeout: 90_000 }, async () => {
    const victim = cluster.pods[1]!;
    const address = `${victim.ip}:${SIDECAR_PORT}`;
    // About 10 s of calls, each 300 ms at the pod, so that some are always waiting on the victim.
    const rest = cluster.client.load({ target: outbound.target, protocol: 'rest', calls: 120, concurrency: 4, durationMs: 10_000, delayMs: 300, deadlineMs: 10_000 });
    await sleep(2000);
    const blackholedAt = Date.now();
    await cluster.blackhole(victim.ip);
    const ejectedAfter = await until('the endpoint ejected', DETECT_MS + SLACK_MS + 2000, async () => (await endpointState(outbound, address)) !== 'ready');
    await sleep(Math.max(0, 7000 - (Date.now() - blackholedAt)));
    const healedAt = Date.now();
    await cluster.heal(victim.ip);
    const r = await rest;
    const scenario = 'upstream pod blackholed under load, outbound sidecar speaking HTTP/1.1 to the pods';
    reportFigure({ section: 'network-faults', scenario, name: 'detection (blackhole to endpoint ejected)', value: ejectedAfter, unit: 'ms' });
    reportFigure({ section: 'network-faults', scenario, name: 'REST calls answered', value: JSON.stringify(perCode(r)) });
    reportFigure({ section: 'network-faults', scenario, name: 'longest call (deadline 10 s; 300 ms of service time)', value: longest(r), unit: 'ms' });

    // No call waited for its 10 s deadline: the ones on the victim were answered 503, the rest 200.
    assert.ok(longest(r) < DETECT_MS + SLACK_MS + 300, `longest call ${longest(r)} ms: ${slowest(r, blackholedAt)} (times after the blackhole)`);
    assert.deepEqual(Object.keys(perCode(r)).filter((c) => c !== '200' && c !== '503'), [], `REST codes ${JSON.stringify(perCode(r))}`);
    const failed = r.filter((t) => t.code !== '200');
    assert.ok(failed.length > 0, 'calls were waiting on the victim when it vanished');
    for (const t of failed) {
      assert.ok(t.start < blackholedAt + DETECT_MS + SLACK_MS, `a call started ${t.start - blackholedAt} ms after the blackhole failed: new calls go elsewhere`);
      assert.ok(t.end < blackholedAt + DETECT_MS + SLACK_MS, `a failed call ended ${t.end - blackholedAt} ms after the blackhole`);
    }
    const during = r.filter((t) => t.start > blackholedAt + DETECT_MS + SLACK_MS && t.end < healedAt);
    assert.ok(during.length > 20, `calls while it was out: ${during.length}`);
    assert.deepEqual(perPod(during)[victim.name], undefined);

    const m = await outbound.scrape();
    assert.ok(sum(m, 'rpcscope_keepalive_timeouts_total', { side: 'upstream' }) >= 1, 'the outbound sidecar counted the silent endpoint');
    // Ejected for whichever came first: the silence, or a new connection to it not made within --connect-timeout.
    assert.ok(sum(m, 'rpcscope_upstream_ejections_total') >= 1, 'and the ejection');
    assert.equal(sum(m, 'rpcscope_calls_active'), 0, 'no call left in flight');

    const backAfter = await until('the endpoint back in rotation', 35_000, async () => (await endpointState(outbound, address)) === 'ready');
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'rest', calls: 30, concurrency: 3 });
    assert.deepEqual(perCode(tally), { 200: 30 });
    assert.ok((perPod(tally)[victim.name] ?? 0) >= 8, `the victim answers again: ${JSON.stringify(perPod(tally))}`);
    reportFigure({ section: 'network-faults', scenario: 'upstream pod blackholed under load, outbound sidecar speaking HTTP/1.1 to the pods', name: 'back in rotation after the heal', value: backAfter, unit: 'ms' });
  });

  test('a slow answer is not a vanished pod: calls silent for many intervals on a reachable pod finish', { timeout: 60_000 }, async () => {
    const before = sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' });
    // Each call waits 3.5 s at its pod, silent for three keepalive intervals.
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'rest', calls: 6, concurrency: 3, delayMs: 3500, deadlineMs: 10_000 });
    assert.deepEqual(perCode(tally), { 200: 6 });
    assert.equal(sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' }), before, 'no endpoint taken for gone');
  });
});
