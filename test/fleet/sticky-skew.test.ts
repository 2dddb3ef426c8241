// The problem rpcscope exists to show: a gRPC client with one long-lived
// HTTP/2 connection, behind a balancer that balances connections (kube-proxy),
// sends every call to one pod. Each inbound sidecar only sees its own pod; the
// per-pod figures, the calls per connection and the cross-pod skew the
// Prometheus rules compute must all point at it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { select, sum } from '../support/metrics-text.ts';
import { debugConnections, pollUntil, startFleet, type Fleet } from './fleet.ts';
import { OrderClient, sendLoad } from './order-client.ts';

const PODS = 3;
const CALLS = 300;

let fleet: Fleet;

before(async () => {
  fleet = await startFleet({ pods: PODS, prometheus: true });
});

after(async () => {
  await fleet.stop();
});

test('one HTTP/2 client through a connection balancer lands on one pod, and every figure shows it', { timeout: 60_000 }, async () => {
  // Each pod has served a call before (another caller, a smoke test): the
  // skew rule counts only pods that have a calls series at all, so a pod that
  // has never served one would be left out of the mean (the rule says so).
  for (const pod of fleet.pods) {
    const warm = new OrderClient(`${pod.endpoint.host}:${pod.endpoint.port}`);
    assert.equal((await warm.getOrder('ord-000001')).code, 'OK');
    warm.close();
  }

  const client = new OrderClient(`${fleet.balancer.host}:${fleet.balancer.port}`);
  // About 6 s of calls, so that Prometheus scrapes the rate several times.
  const load = await sendLoad(client, { calls: CALLS, concurrency: 4, durationMs: 6000 });
  const loadEnd = Date.now();

  assert.deepEqual(load.perCode, { OK: CALLS });
  const answering = Object.keys(load.perPod);
  assert.equal(answering.length, 1, `every call answered by one pod, got ${JSON.stringify(load.perPod)}`);
  const busy = answering[0]!;
  assert.equal(Object.values(fleet.balancer.connectionsPerBackend()).reduce((a, b) => a + b, 0), 1, 'the client opened one connection');

  // What each inbound sidecar counted: the busy pod all the load, the others their one warm-up call.
  const calls = await fleet.perPod('rpcscope_calls_total', { direction: 'inbound', code: 'OK' });
  assert.deepEqual(
    calls,
    Object.fromEntries(fleet.pods.map((p) => [p.name, p.name === busy ? CALLS + 1 : 1])),
  );

  // The live view: the busy pod holds one open downstream connection that
  // carried every call it saw since (share 1); the other pods hold none.
  const busyPod = fleet.pods.find((p) => p.name === busy)!;
  for (const pod of fleet.pods) {
    const { downstream } = await debugConnections(pod.adminUrl);
    if (pod !== busyPod) {
      assert.equal(downstream.connections, 0, `${pod.name} has no client connection open`);
      continue;
    }
    assert.equal(downstream.connections, 1);
    assert.deepEqual(
      { http_version: downstream.list[0]?.http_version, calls: downstream.list[0]?.calls, calls_active: downstream.list[0]?.calls_active, share: downstream.list[0]?.share },
      { http_version: '2', calls: CALLS, calls_active: 0, share: 1 },
    );
  }

  // Closing it lands its call count in the closed-connection histogram.
  client.close();
  await pollUntil(
    () => fleet.scrape(busyPod),
    (m) => sum(m, 'rpcscope_connection_calls_count', { side: 'downstream' }) >= 2,
  );
  const busyMetrics = await fleet.scrape(busyPod);
  const bucket = (le: string): number => select(busyMetrics, 'rpcscope_connection_calls_bucket', { side: 'downstream', http_version: '2', le })[0]?.value ?? NaN;
  assert.equal(select(busyMetrics, 'rpcscope_connection_calls_count', { side: 'downstream', http_version: '2' })[0]?.value, 2, 'two closed connections: the warm-up and the client');
  assert.equal(select(busyMetrics, 'rpcscope_connection_calls_sum', { side: 'downstream', http_version: '2' })[0]?.value, CALLS + 1);
  assert.equal(bucket('1000') - bucket('100'), 1, 'one connection carried more than 100 calls');

  // Prometheus, across pods, by the repo's recording rules.
  await fleet.waitForPrometheus('rpcscope_calls_total', { direction: 'inbound' });
  const caughtUp = Date.now();
  assert.ok(caughtUp - loadEnd < 120_000, 'the 2m rate window still covers the load');
  const skew = await fleet.recorded('namespace_service:rpcscope_calls_total:pod_skew2m', caughtUp);
  assert.equal(skew.length, 1);
  const skewValue = Number(skew[0]!.value[1]);
  assert.ok(Math.abs(skewValue - PODS) < 0.05, `cross-pod skew ${skewValue}, expected about ${PODS}`);

  const shares = await fleet.recorded('namespace_service_pod:rpcscope_calls_total:share2m', caughtUp);
  const busyShare = Number(shares.find((s) => s.metric.pod === busy)?.value[1]);
  assert.ok(busyShare > 0.99, `the busy pod's share ${busyShare}`);
});
