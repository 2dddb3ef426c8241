// A pod that vanishes from the network (its node's packets dropped both ways:
// no FIN, no RST) behind an outbound sidecar, the terminating data plane. Its
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
import { namespacesRefused } from './netns.ts';
import { longest, perCode, perPod } from './tally.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

const INTERVAL_MS = 1000;
const TIMEOUT_MS = 1000;
/** The latest a dead connection is found after its last byte: a quiet interval (±10 %) to notice, one more to PING, the timeout. */
const DETECT_MS = 2 * 1.1 * INTERVAL_MS + TIMEOUT_MS;
/** Scheduling on 2 shared cores. */
const SLACK_MS = 1000;
const KEEPALIVE = ['--keepalive-interval', `${INTERVAL_MS}ms`, '--keepalive-timeout', `${TIMEOUT_MS}ms`];

async function endpointState(outbound: OutboundSidecar, address: string): Promise<string | undefined> {
  const view = await outbound.debugConnections();
  return (view.endpoints as { upstream: string; state: string }[] | undefined)?.find((e) => e.upstream === address)?.state;
}

async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

describe('an upstream pod blackholed behind an outbound sidecar', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--data-plane', 'terminate', '--drain-delay', '2s', ...KEEPALIVE] });
    // HTTP/2 toward the pods for REST callers too: an HTTP/1.1 connection has no PING to find it dead.
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
    console.log(`# blackholed upstream: ejected after ${ejectedAfter} ms, victim's sidecar free of the ghost after ${ghostFreeAfter} ms; gRPC ${JSON.stringify(perCode(g))}, REST ${JSON.stringify(perCode(r))}; longest call ${Math.max(longest(g), longest(r))} ms`);

    // No call hung: every one ended well inside its 10 s deadline.
    assert.ok(longest(g) < DETECT_MS + SLACK_MS + 300 && longest(r) < DETECT_MS + SLACK_MS + 300, `longest call ${longest(g)} ms (gRPC), ${longest(r)} ms (REST)`);
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
    console.log(`# blackholed upstream: back in rotation ${backAfter} ms after the heal was seen`);
  });

  test('an idle pooled connection to a vanished pod is found and its endpoint ejected before a call needs it', { timeout: 60_000 }, async () => {
    // Every pod has a pooled connection from the test before.
    const victim = cluster.pods[2]!;
    const before = sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' });
    const blackholedAt = Date.now();
    await cluster.blackhole(victim.ip);
    const found = await until('the idle connection found dead', DETECT_MS + SLACK_MS + 2000, async () => sum(await outbound.scrape(), 'rpcscope_keepalive_timeouts_total', { side: 'upstream' }) > before);
    assert.equal(await endpointState(outbound, `${victim.ip}:${SIDECAR_PORT}`).then((s) => s !== 'ready'), true, 'ejected');
    const tally = await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 60, concurrency: 3, deadlineMs: 5000 });
    await cluster.heal(victim.ip);
    console.log(`# idle blackholed upstream: found after ${found} ms (blackhole at ${blackholedAt})`);
    assert.deepEqual(perCode(tally), { OK: 60 });
    assert.equal(perPod(tally)[victim.name], undefined, 'no call sent to it');
    assert.ok(longest(tally) < 1000, `no call waited on it: longest ${longest(tally)} ms`);
  });
});
