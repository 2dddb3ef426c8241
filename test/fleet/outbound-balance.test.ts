// The outbound fix: the calling app keeps its one HTTP/2 connection, to its own
// outbound sidecar, which picks an endpoint (here the pods' inbound sidecars)
// for every call. The pods' sidecars count what each pod received; the
// outbound sidecar's own skew gauge says how even it was.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFleet, type Fleet } from './fleet.ts';
import { startOutboundSidecar, type BalancePolicy, type OutboundSidecar } from './outbound-sidecar.ts';
import { clientThroughOutbound, cycleShare, slowMixThroughOutbound } from './scenarios.ts';
import { backendKey } from './tcp-balancer.ts';

const PODS = 3;
const CALLS = 300;
let fleet: Fleet;
const outbound = new Map<BalancePolicy, OutboundSidecar>();

before(async () => {
  fleet = await startFleet({ pods: PODS });
  const endpoints = fleet.pods.map((p) => p.endpoint);
  // Each policy its own sidecar: the 30 s skew window must see only its own run.
  const started = await Promise.allSettled((['round_robin', 'least_request', 'ewma', 'sticky'] as const).map(async (balance) => outbound.set(balance, await startOutboundSidecar({ balance, endpoints }))));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
});

after(async () => {
  await Promise.all([...outbound.values()].map((o) => o.stop()));
  await fleet.stop();
});

function assertEven(perPod: Record<string, number>, tolerance: number): void {
  const even = CALLS / PODS;
  for (const pod of fleet.pods) {
    const n = perPod[pod.name] ?? 0;
    assert.ok(Math.abs(n - even) <= even * tolerance, `${pod.name} got ${n} calls, even is ${even} ±${tolerance * 100} %: ${JSON.stringify(perPod)}`);
  }
}

test(`--balance round_robin: ${CALLS} calls on one client connection, each pod its exact share, in turn`, { timeout: 30_000 }, async () => {
  const o = outbound.get('round_robin')!;
  const run = await clientThroughOutbound(fleet, o, { calls: CALLS });
  assert.deepEqual(run.load.perCode, { OK: CALLS });
  // This sidecar carries only this test's calls, and round robin over three
  // usable endpoints gives each exactly a third of a multiple of three picks. A
  // picker choosing at random gives 100/100/100 with probability 0.28 % (the
  // ±15 % this test once allowed, 86 %).
  assert.deepEqual(run.perEndpoint, Object.fromEntries(fleet.pods.map((p) => [backendKey(p.endpoint), CALLS / PODS])), 'each endpoint its exact share');
  // The pods' inbound counts are the outbound sidecar's per-endpoint counts.
  assert.deepEqual(run.perEndpoint, Object.fromEntries(fleet.pods.map((p) => [backendKey(p.endpoint), run.perPod[p.name]])));
  // And in turn: call n and call n+3 (in the order the client started them) went to
  // the same pod. Round robin misses only where calls overtook one another on the way
  // (four run at once); a random picker matches a pair with probability 1/3, so
  // reaching 90 % of 297 pairs has probability below 1e-92 for it.
  const inTurn = cycleShare(run.load.results, PODS);
  assert.ok(inTurn >= 0.9, `calls n and n+${PODS} on the same pod: ${(inTurn * 100).toFixed(1)} %`);
  assert.ok(run.loadSkew < 1.05, `rpcscope_load_skew_ratio ${run.loadSkew}`);
  assert.equal(await o.endpointsKnown(), PODS);
});

for (const [balance, tolerance] of [
  ['least_request', 0.15],
  // EWMA sends more to whichever pod answered faster lately, by design (as Linkerd's and Finagle's
  // peak EWMA do): on identical pods sharing two cores its split follows scheduling noise, so it
  // is held only to spreading over every pod, each within half of the even share.
  ['ewma', 0.5],
] as const) {
  test(`--balance ${balance}: ${CALLS} calls on one client connection spread over every pod`, { timeout: 30_000 }, async () => {
    const o = outbound.get(balance)!;
    const run = await clientThroughOutbound(fleet, o, { calls: CALLS });
    assert.deepEqual(run.load.perCode, { OK: CALLS });
    assertEven(run.perPod, tolerance);
    // The outbound sidecar's per-endpoint counts are the pods' inbound counts.
    assert.deepEqual(run.perEndpoint, Object.fromEntries(fleet.pods.map((p) => [backendKey(p.endpoint), run.perPod[p.name]])));
    assert.ok(run.loadSkew < 1 + tolerance, `rpcscope_load_skew_ratio ${run.loadSkew}`);
    assert.equal(await o.endpointsKnown(), PODS);
  });
}

test('--balance least_request: slow calls spread by calls in flight where round robin piles them on one pod', { timeout: 30_000 }, async () => {
  // Every third call is slow; round robin over three endpoints gives all of them to the same one.
  const mix = { calls: 300, intervalMs: 10, slowMs: 300 };
  // One after the other: on shared pods, the calls in flight of one run would count in the other's.
  const rr = await slowMixThroughOutbound(outbound.get('round_robin')!, mix);
  const lr = await slowMixThroughOutbound(outbound.get('least_request')!, mix);
  for (const run of [rr, lr]) assert.ok(run.results.every((r) => r.code === 'OK'));
  assert.equal(Math.max(...Object.values(rr.slowPerPod)), 100, `round robin: ${JSON.stringify(rr.slowPerPod)}`);
  // Where the slow calls went is what each picker decided, whatever the machine's speed. The peak
  // calls in flight per endpoint (sampled every 100 ms) is not: a client or sidecar held up for a
  // moment on a busy machine piles up every endpoint's calls at once, which swamped the few slow calls
  // it was to show (seen: round robin 36/22/22 against least_request 29/44/24, and 84/84/83 against
  // 84/85/83). It is in the messages, no longer compared.
  const slowShares = fleet.pods.map((p) => (lr.slowPerPod[p.name] ?? 0) / 100);
  const seen = `least_request: slow calls per pod ${JSON.stringify(lr.slowPerPod)}, peak in flight ${JSON.stringify(lr.peakInFlight)} (round robin ${JSON.stringify(rr.peakInFlight)})`;
  assert.ok(Math.max(...slowShares) < 0.5, seen);
  assert.ok(Math.min(...slowShares) > 0.15, seen);
});

test('--balance sticky: one client connection stays on one endpoint and the skew gauge says so', { timeout: 30_000 }, async () => {
  const o = outbound.get('sticky')!;
  const run = await clientThroughOutbound(fleet, o, { calls: CALLS });
  assert.deepEqual(run.load.perCode, { OK: CALLS });
  const busy = Object.entries(run.perEndpoint).filter(([, n]) => n > 0);
  assert.equal(busy.length, 1, `one endpoint took every call: ${JSON.stringify(run.perEndpoint)}`);
  assert.equal(busy[0]![1], CALLS);
  assert.ok(Math.abs(run.loadSkew - PODS) < 0.05, `rpcscope_load_skew_ratio ${run.loadSkew}, expected about ${PODS}`);
});
