// Acceptance: --histograms native, as a user checks it with Prometheus. The real
// `sidecar/bin/rpcscope` proxies an app that adds a known latency (30 ms to three
// calls in four, 120 ms to the fourth); two real Prometheus servers scrape it at
// once: one with --enable-feature=native-histograms, which asks for the protobuf
// exposition and stores native histograms, and one without, which reads the
// text format and its classic buckets. The quantiles the two compute from the
// same calls must agree within the classic buckets' error, and the native ones
// must sit within a native bucket of the latency the app added.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { WorkloadClient, startWorkloadUpstream, workloadMethod, type WorkloadUpstream } from '../support/workload-upstream.ts';

const METHOD = workloadMethod(7);
/** The app's added latency, in seconds: three calls in four fast, the fourth slow. */
const FAST = 0.03;
const SLOW = 0.12;
/** Native schema 3: neighbouring bucket boundaries are 2^(1/8) apart. */
const NATIVE_STEP = 2 ** (1 / 8);

async function one(prom: RunningPrometheus, expr: string): Promise<number> {
  const result = await prom.query(expr);
  assert.equal(result.length, 1, `${expr}: one series, got ${JSON.stringify(result)}`);
  return Number(result[0]!.value[1]);
}

describe('native histograms scraped by Prometheus', () => {
  let upstream: WorkloadUpstream;
  let sc: SidecarProcess;
  let native: RunningPrometheus;
  let classic: RunningPrometheus;
  let made = 0;
  /** Seconds each call took as the client saw it: the sidecar measures each a little less. */
  const seen: number[] = [];

  before(async () => {
    upstream = await startWorkloadUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http2', '--histograms', 'native', '--log-level', 'info']);
    const target = { address: sc.adminUrl.replace('http://', ''), labels: { pod: 'p0' } };
    [native, classic] = await Promise.all([startPrometheus({ targets: [target], features: ['native-histograms'] }), startPrometheus({ targets: [target] })]);
    await Promise.all([native.waitForData('up == 1'), classic.waitForData('up == 1')]);
    const client = new WorkloadClient(sc.url);
    const until = Date.now() + 6000;
    while (Date.now() < until) {
      const ms = await Promise.all([client.grpc(7, 0, FAST * 1000), client.grpc(7, 0, FAST * 1000), client.grpc(7, 0, FAST * 1000), client.grpc(7, 0, SLOW * 1000)]);
      seen.push(...ms.map((v) => v / 1000));
      made += 4;
    }
    client.close();
    // Both have scraped the last calls: the count of calls each holds is every call made.
    const counted = `sum(rpcscope_calls_total{method="${METHOD}"}) == ${made}`;
    await Promise.all([native.waitForData(counted, 15_000), classic.waitForData(counted, 15_000)]);
  });

  after(async () => {
    await Promise.all([native?.stop(), classic?.stop()]);
    await sc?.stop();
    await upstream?.close();
  });

  it('stores the latency as one native histogram series, counting every call, with no classic buckets beside it', async () => {
    assert.equal(await one(native, `histogram_count(rpcscope_call_duration_seconds{method="${METHOD}"})`), made);
    const nativeSum = await one(native, `histogram_sum(rpcscope_call_duration_seconds{method="${METHOD}"})`);
    const classicSum = await one(classic, `rpcscope_call_duration_seconds_sum{method="${METHOD}"}`);
    assert.ok(Math.abs(nativeSum - classicSum) < 1e-6 * classicSum, `the native sum ${nativeSum} is the classic one ${classicSum}`);
    assert.deepEqual(await native.query('rpcscope_call_duration_seconds_bucket'), [], 'native only: no classic latency buckets');
    assert.ok((await native.query('rpcscope_proxy_overhead_seconds_bucket')).length > 0, 'families without native buckets keep their classic ones');
    assert.ok((await classic.query(`rpcscope_call_duration_seconds_bucket{method="${METHOD}"}`)).length > 0, 'a text scrape gets the classic buckets');
  });

  for (const [q, truth, low, high] of [[0.5, FAST, 0.025, 0.05], [0.9, SLOW, 0.1, 0.25]] as const) {
    it(`p${q * 100}: native and classic agree within the classic bucket (${low}, ${high}], native within a bucket of the app's ${truth * 1000} ms and the client's p${q * 100}`, async () => {
      const n = await one(native, `histogram_quantile(${q}, sum(rate(rpcscope_call_duration_seconds{method="${METHOD}"}[1m])))`);
      const c = await one(classic, `histogram_quantile(${q}, sum by (le) (rate(rpcscope_call_duration_seconds_bucket{method="${METHOD}"}[1m])))`);
      assert.ok(c > low && c <= high, `classic p${q * 100} ${c} in (${low}, ${high}]`);
      assert.ok(n > low && n <= high, `native p${q * 100} ${n} in the same classic bucket (${low}, ${high}]`);
      assert.ok(Math.abs(n - c) <= high - low, `native ${n} and classic ${c} within the bucket's width`);
      // The sidecar measures at least the app's delay, and less than the client sees.
      const client = [...seen].sort((a, b) => a - b)[Math.ceil(q * seen.length) - 1]!;
      assert.ok(n >= truth / NATIVE_STEP && n <= client * NATIVE_STEP, `native p${q * 100} ${n} within a native bucket of ${truth} and of the client's ${client}`);
    });
  }

  it('the deadline families carry native histograms too', async () => {
    // Method 7 carries no deadline (odd methods do not); method 8's calls do.
    const client = new WorkloadClient(sc.url);
    for (let i = 0; i < 5; i++) await client.grpc(8, 0);
    client.close();
    await native.waitForData('histogram_count(rpcscope_deadline_requested_seconds) == 5', 15_000);
    assert.equal(await one(native, 'histogram_sum(rpcscope_deadline_requested_seconds)'), 25, 'five 5 s budgets');
    assert.equal(await one(native, 'histogram_count(rpcscope_deadline_used_ratio)'), 5);
    assert.deepEqual(await native.query('rpcscope_deadline_requested_seconds_bucket'), []);
  });
});
