// The inbound fix that needs no change to the clients: --max-connection-age on
// the pods' sidecars sends each client connection a GOAWAY after about that
// age, the client reconnects through the connection balancer (likely to another
// pod) and the calls it had in flight finish on the old connection.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startFleet, type Fleet } from './fleet.ts';
import { clientThroughBalancer, podSkew, sharesOf } from './scenarios.ts';

const PODS = 3;
let fleet: Fleet;

before(async () => {
  fleet = await startFleet({ pods: PODS, sidecarArgs: ['--max-connection-age', '1s'] });
});

after(async () => {
  await fleet.stop();
});

test('with --max-connection-age 1s, one HTTP/2 client spreads over the pods and loses no call', { timeout: 60_000 }, async () => {
  // About 10 s of calls, four at a time, each 20 ms at the pod: some are always in flight when a GOAWAY comes.
  const run = await clientThroughBalancer(fleet, { calls: 300, durationMs: 10_000, delayMs: 20 });

  assert.deepEqual(run.load.perCode, { OK: 300 }, 'no call failed across the GOAWAYs');
  assert.ok(run.goaways >= 5, `the sidecars sent a GOAWAY about every second, got ${run.goaways}`);
  assert.ok(run.connections >= 5, `the client reconnected after each, opened ${run.connections}`);
  // The client's own view (x-pod) and the sidecars' counts agree.
  assert.deepEqual(Object.fromEntries(Object.entries(run.perPod).filter(([, n]) => n > 0)), run.load.perPod);
  const skew = podSkew(fleet, run.perPod);
  assert.ok(skew < 2, `skew ${skew.toFixed(2)} over ${PODS} pods (one pinned pod would be ${PODS}); shares ${JSON.stringify(sharesOf(fleet, run.perPod))}`);
  assert.ok(Object.values(run.perPod).filter((n) => n > 0).length >= 2, 'more than one pod answered');
});
