// The exponential buckets against the OpenTelemetry SDK's base2 exponential
// histogram aggregation, read through its public MetricReader: the same values
// must give the same scale, offset and bucket counts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AggregationType, DataPointType, MeterProvider, MetricReader, type ExponentialHistogram } from '@opentelemetry/sdk-metrics';
import { ExponentialBuckets, MAX_BUCKETS, bucketIndex, bucketLowerBound } from '../../src/observe/exponential-buckets.ts';

class Reader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** What the SDK's aggregation makes of `values`. */
async function sdkHistogram(values: readonly number[]): Promise<ExponentialHistogram> {
  const reader = new Reader();
  const provider = new MeterProvider({ readers: [reader], views: [{ instrumentName: 'h', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }] });
  const h = provider.getMeter('test').createHistogram('h');
  for (const v of values) h.record(v);
  const { resourceMetrics } = await reader.collect();
  const metric = resourceMetrics.scopeMetrics[0]!.metrics[0]!;
  assert.equal(metric.dataPointType, DataPointType.EXPONENTIAL_HISTOGRAM);
  await provider.shutdown();
  return metric.dataPoints[0]!.value as ExponentialHistogram;
}

function ours(values: readonly number[]): ExponentialBuckets {
  const b = new ExponentialBuckets();
  for (const v of values) b.record(v);
  return b;
}

/** Trailing and leading empty buckets aside, as the SDK trims them. */
function trimmed(b: ExponentialBuckets): { scale: number; offset: number; counts: number[] } {
  let first = 0;
  while (first < b.counts.length && b.counts[first] === 0) first++;
  let last = b.counts.length;
  while (last > first && b.counts[last - 1] === 0) last--;
  return { scale: b.scale, offset: b.offset + first, counts: b.counts.slice(first, last) };
}

function assertLikeSdk(b: ExponentialBuckets, sdk: ExponentialHistogram, what: string): void {
  assert.deepEqual(trimmed(b), { scale: sdk.scale, offset: sdk.positive.offset, counts: sdk.positive.bucketCounts }, what);
  assert.equal(b.zeroCount, sdk.zeroCount, `${what}: zero count`);
  assert.equal(b.count, sdk.count, `${what}: count`);
  assert.ok(Math.abs(b.sum - sdk.sum!) <= 1e-9 * Math.max(1, sdk.sum!), `${what}: sum`);
}

/** A deterministic spread of call latencies: 50 µs to 30 s, clustered as calls are. */
function latencies(n: number, seed: number): number[] {
  let x = seed;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out.push(0.00005 * Math.exp((x / 2 ** 31) * Math.log(600_000)));
  }
  return out;
}

describe('ExponentialBuckets', () => {
  it('buckets values as the OpenTelemetry SDK does, scaling down as the range grows', async () => {
    const cases: [string, number[]][] = [
      ['one value', [0.042]],
      ['powers of two, on bucket boundaries', [0.25, 0.5, 1, 2, 4]],
      ['a narrow range, at a fine scale', [0.040, 0.0401, 0.0405, 0.041, 0.043]],
      ['zeros', [0, 0, 0.003]],
      ['latencies from 50 µs to 30 s', latencies(2000, 7)],
      ['sizes in bytes', [64, 1500, 1500, 70_000, 4_000_000]],
    ];
    for (const [what, values] of cases) {
      const b = ours(values);
      assert.ok(b.counts.length <= MAX_BUCKETS, `${what}: ${b.counts.length} buckets`);
      assertLikeSdk(b, await sdkHistogram(values), what);
    }
  });

  it('puts every value in the bucket whose bounds hold it', () => {
    for (const scale of [20, 8, 3, 0, -2]) {
      for (const v of [...latencies(200, 3), 1, 0.5, 1024]) {
        const i = bucketIndex(v, scale);
        assert.ok(bucketLowerBound(i, scale) < v * (1 + 1e-12) && v <= bucketLowerBound(i + 1, scale) * (1 + 1e-12), `${v} at scale ${scale} in bucket ${i}`);
      }
    }
  });

  it('merges two histograms of different scales into what one that saw every value holds', async () => {
    const narrow = latencies(300, 11).map((v) => 0.04 + v / 1000);
    const wide = latencies(300, 13);
    const a = ours(narrow);
    const b = ours(wide);
    assert.notEqual(a.scale, b.scale);
    a.merge(b);
    assertLikeSdk(a, await sdkHistogram([...narrow, ...wide]), 'merged');
  });
});
