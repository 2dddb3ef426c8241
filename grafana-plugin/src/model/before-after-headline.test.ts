import { promFrames } from '../../test-support/prometheus-frames';
import { buildBeforeAfter } from './before-after';
import { beforeAfterHeadline } from './before-after-headline';
import { beforeAfterText } from './headline-text';
import { readSeries } from './series';

const op = (operation: string, protocol: string) => ({ operation, protocol });
const steady = (v: number, n = 4) => Array.from({ length: n }, () => v);
const units = { latencyUnit: 'auto', bytesUnit: 'iec', rateUnit: 'per_second' } as const;
const thresholds = { relativeThreshold: 10, ratioThreshold: 0.5 };

// 4 points 15 s apart: 10/s is 600 calls, 1/s is 60.
const frames = [
  ...promFrames('p99_before', [
    { labels: op('GetOrder', 'rest'), values: steady(0.1) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.2) },
    { labels: op('Ping', 'grpc'), values: steady(0.01) },
    { labels: op('Rare', 'grpc'), values: steady(0.1) },
  ]),
  ...promFrames('p99', [
    { labels: op('GetOrder', 'grpc'), values: steady(0.053) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.21) },
    { labels: op('Ping', 'grpc'), values: steady(0.0102) },
    { labels: op('Rare', 'grpc'), values: steady(0.9) },
  ]),
  ...promFrames('errors_before', [
    { labels: op('GetOrder', 'rest'), values: steady(0.004) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.01) },
  ]),
  ...promFrames('errors', [
    { labels: op('GetOrder', 'grpc'), values: steady(0.09) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.13) },
  ]),
  ...promFrames('rate_before', [
    { labels: op('GetOrder', 'rest'), values: steady(10) },
    { labels: op('ListOrders', 'grpc'), values: steady(10) },
    { labels: op('Ping', 'grpc'), values: steady(10) },
    { labels: op('Rare', 'grpc'), values: steady(1) },
  ]),
  ...promFrames('rate', [
    { labels: op('GetOrder', 'grpc'), values: steady(10.5) },
    { labels: op('ListOrders', 'grpc'), values: steady(10) },
    { labels: op('Ping', 'grpc'), values: steady(10) },
    { labels: op('Rare', 'grpc'), values: steady(1) },
  ]),
];

function headline() {
  const model = buildBeforeAfter(readSeries(frames), {
    metrics: ['p99', 'rate', 'errors'],
    reducer: 'mean',
    minCalls: 500,
    rangeSeconds: 60,
    ...thresholds,
  });
  return beforeAfterHeadline(model, thresholds);
}

describe('beforeAfterHeadline', () => {
  it('ranks the rows with enough calls by their largest change and names them in one sentence', () => {
    const h = headline();
    // ListOrders: errors 1 % → 13 % is +12 pp, 24 thresholds of 0.5 pp; p99 +5 % is under 10 %.
    // GetOrder moved REST → gRPC: errors 0.4 % → 9 % is +8.6 pp (17.2 thresholds), p99 −47 %
    // (4.7 thresholds); calls +5 % stay out.
    expect(h.changed.map((c) => [c.row.operation, c.score])).toEqual([
      ['ListOrders', expect.closeTo(24, 9)],
      ['GetOrder', expect.closeTo(17.2, 9)],
    ]);
    expect(h.changed.map((c) => beforeAfterText(c, units))).toEqual([
      'errors +12.0 pp for ListOrders (gRPC)',
      'errors +8.60 pp for GetOrder (REST \u2192 gRPC), p99 \u221247 %',
    ]);
  });

  it('keeps rows without a change apart from rows with too few calls, which never make the headline', () => {
    const h = headline();
    expect(h.unchanged.map((r) => r.operation)).toEqual(['Ping']);
    // Rare's p99 +800 % rests on 60 calls a side.
    expect(h.fewCalls.map((r) => [r.operation, r.callsBefore, r.callsAfter])).toEqual([['Rare', 60, 60]]);
  });
});
