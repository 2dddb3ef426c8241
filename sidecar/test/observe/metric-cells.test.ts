import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DataPointType } from '@opentelemetry/sdk-metrics';
import { HistogramFamily, ValueFamily, hrTimeFromMillis } from '../../src/observe/metric-cells.ts';

test('a histogram bucket holds values up to and including its boundary (Prometheus le)', () => {
  const family = new HistogramFamily('h', 'help', [1, 5]);
  const cell = family.cell({ a: 'x' });
  for (const v of [0, 1, 1.0001, 5, 6, 100]) cell.record(v);
  assert.deepEqual(cell.counts, [2, 2, 2]);
  assert.equal(cell.count, 6);
  assert.equal(cell.sum, 113.0001);
});

test('families become data points: counters monotonic sums, gauges gauges, histograms with their boundaries', () => {
  const t = hrTimeFromMillis(1_700_000_000_123.5);
  assert.deepEqual(t, [1_700_000_000, 123_500_000]);
  const counter = new ValueFamily('c_total', 'help', 'counter');
  counter.cell({ k: 'v' }).value = 3;
  const c = counter.toMetricData(t, t);
  assert.equal(c.dataPointType, DataPointType.SUM);
  assert.equal(c.dataPointType === DataPointType.SUM && c.isMonotonic, true);
  assert.deepEqual(c.dataPoints.map((p) => [p.attributes, p.value]), [[{ k: 'v' }, 3]]);
  const gauge = new ValueFamily('g', 'help', 'gauge');
  gauge.cell({}).value = -1;
  assert.equal(gauge.toMetricData(t, t).dataPointType, DataPointType.GAUGE);
  const hist = new HistogramFamily('h', 'help', [1]);
  const cell = hist.cell({});
  cell.record(2);
  const h = hist.toMetricData(t, t);
  assert.equal(h.dataPointType, DataPointType.HISTOGRAM);
  assert.deepEqual(h.dataPoints[0]!.value, { buckets: { boundaries: [1], counts: [0, 1] }, sum: 2, count: 1 });
  cell.record(0);
  assert.deepEqual(h.dataPoints[0]!.value, { buckets: { boundaries: [1], counts: [0, 1] }, sum: 2, count: 1 }, 'a snapshot, not a live view');
});
