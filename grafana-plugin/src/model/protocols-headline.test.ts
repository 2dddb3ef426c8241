import { promFrames } from '../../test-support/prometheus-frames';
import { protocolVerdictText } from './headline-text';
import { buildProtocolMatrix } from './protocols';
import { protocolHeadline } from './protocols-headline';
import { readSeries } from './series';

const op = (operation: string, protocol: string) => ({ operation, protocol });
const steady = (v: number, n = 4) => Array.from({ length: n }, () => v);
const units = { latencyUnit: 'auto', bytesUnit: 'iec', rateUnit: 'per_second' } as const;
const thresholds = { relativeThreshold: 10, ratioThreshold: 0.5 };

// promFrames spaces points 15 s apart: 4 points of 10/s stand for 4 × 15 × 10 = 600 calls.
const frames = [
  ...promFrames('p99', [
    { labels: op('GetOrder', 'rest'), values: steady(0.1) },
    { labels: op('GetOrder', 'grpc'), values: steady(0.039) },
    { labels: op('GetOrder', 'connect'), values: steady(0.095) },
    { labels: op('ListOrders', 'rest'), values: steady(0.2) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.15) },
    { labels: op('Ping', 'rest'), values: steady(0.01) },
    { labels: op('Ping', 'grpc'), values: steady(0.0105) },
    { labels: op('Rare', 'rest'), values: steady(0.5) },
    { labels: op('Rare', 'grpc'), values: steady(0.1) },
  ]),
  ...promFrames('rate', [
    { labels: op('GetOrder', 'rest'), values: steady(10) },
    { labels: op('GetOrder', 'grpc'), values: steady(14.2) },
    { labels: op('GetOrder', 'connect'), values: steady(10) },
    { labels: op('ListOrders', 'rest'), values: steady(10) },
    { labels: op('ListOrders', 'grpc'), values: steady(10) },
    { labels: op('Ping', 'rest'), values: steady(10) },
    { labels: op('Ping', 'grpc'), values: steady(10) },
    // 4 × 15 × 1 = 60 calls: under the 500 needed.
    { labels: op('Rare', 'rest'), values: steady(1) },
    { labels: op('Rare', 'grpc'), values: steady(10) },
  ]),
  ...promFrames('errors', [
    { labels: op('GetOrder', 'rest'), values: steady(0.001) },
    { labels: op('GetOrder', 'grpc'), values: steady(0.002) },
    { labels: op('ListOrders', 'rest'), values: steady(0.01) },
    { labels: op('ListOrders', 'grpc'), values: steady(0.05) },
  ]),
];

function headline(minCalls = 500) {
  const series = readSeries(frames);
  const matrix = buildProtocolMatrix(series, { metrics: ['p99', 'rate', 'errors'], baseline: 'rest', reducer: 'mean', ...thresholds });
  return protocolHeadline(matrix, series, { ...thresholds, minCalls, rangeSeconds: 60 });
}

describe('protocolHeadline', () => {
  it('ranks operations by their largest change, in thresholds spanned', () => {
    const h = headline();
    // GetOrder/grpc: p99 (0.039 − 0.1) / 0.1 = −61 % → 6.1 thresholds; calls +42 % is volume, never a change;
    // errors +0.1 pp under 0.5 pp. ListOrders/grpc: errors +4 pp → 8 thresholds; p99 −25 % → 2.5.
    expect(h.verdicts.map((v) => [v.operation, v.protocol, v.score])).toEqual([
      ['ListOrders', 'grpc', expect.closeTo(8, 9)],
      ['GetOrder', 'grpc', expect.closeTo(6.1, 9)],
    ]);
    expect(h.verdicts.map((v) => protocolVerdictText(v, units))).toEqual([
      'ListOrders: gRPC errors +4.00 pp, p99 \u221225 % vs REST',
      'GetOrder: gRPC p99 \u221261 % vs REST',
    ]);
  });

  it('picks the protocol that differs most; Connect within 10 % of REST is no verdict', () => {
    const getOrder = headline().verdicts.find((v) => v.operation === 'GetOrder');
    expect(getOrder?.protocol).toBe('grpc');
  });

  it('names operations compared without a significant change, and leaves out those with too few calls', () => {
    const h = headline();
    // Ping: p99 +5 %, under the 10 % threshold.
    expect(h.unchanged).toEqual(['Ping']);
    // Rare's REST side has 60 calls: its −80 % p99 stays out of the headline.
    expect(h.fewCalls).toEqual(['Rare/grpc']);
    expect(h.callsKnown).toBe(true);
  });

  it('counts a pair with fewer calls once minCalls allows it', () => {
    const rare = headline(60).verdicts.find((v) => v.operation === 'Rare');
    // p99 0.5 s → 0.1 s, −80 %; calls 1/s → 10/s (+900 %) is volume and stays in the table.
    expect(rare && protocolVerdictText(rare, units)).toBe('Rare: gRPC p99 \u221280 % vs REST');
  });

  it('never leads with call volume: an operation whose protocols differ only in calls is unchanged', () => {
    const series = readSeries(promFrames('rate', [
      { labels: op('GetOrder', 'rest'), values: steady(10) },
      { labels: op('GetOrder', 'grpc'), values: steady(53.7) },
    ]));
    const matrix = buildProtocolMatrix(series, { metrics: ['rate'], baseline: 'rest', reducer: 'mean', ...thresholds });
    const h = protocolHeadline(matrix, series, { ...thresholds, minCalls: 0, rangeSeconds: 60 });
    expect(h.verdicts).toEqual([]);
    expect(h.unchanged).toEqual(['GetOrder']);
  });

  it('says nothing without the baseline protocol', () => {
    const series = readSeries(frames);
    const matrix = buildProtocolMatrix(series, { metrics: ['p99'], baseline: 'grpc_web', reducer: 'mean', ...thresholds });
    expect(protocolHeadline(matrix, series, { ...thresholds, minCalls: 0, rangeSeconds: 60 }).verdicts).toEqual([]);
  });
});
