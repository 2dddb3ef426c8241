import { DataFrame } from '@grafana/data';
import { promFrames } from '../../test-support/prometheus-frames';
import { buildBeforeAfter } from './before-after';
import { protocolPath } from './headline-text';
import { readSeries } from './series';

const opts = { reducer: 'mean' as const, relativeThreshold: 10, ratioThreshold: 0.5, minCalls: 500, rangeSeconds: 3600 };
const op = (operation: string, protocol: string) => ({ operation, protocol });
const steady = (v: number, n = 4) => Array.from({ length: n }, () => v);

function build(frames: DataFrame[], metrics = ['p99', 'rate'] as Array<'p99' | 'rate'>) {
  return buildBeforeAfter(readSeries(frames), { ...opts, metrics });
}

describe('buildBeforeAfter', () => {
  it('pairs the same operation and protocol across the two ranges', () => {
    const model = build([
      ...promFrames('p99', [{ labels: op('GetOrder', 'grpc'), values: steady(0.05) }]),
      ...promFrames('p99_before', [{ labels: op('GetOrder', 'grpc'), values: steady(0.1) }]),
      ...promFrames('rate', [{ labels: op('GetOrder', 'grpc'), values: steady(10) }]),
      ...promFrames('rate_before', [{ labels: op('GetOrder', 'grpc'), values: steady(10) }]),
    ]);
    expect(model.callsKnown).toBe(true);
    expect(model.rows).toHaveLength(1);
    const row = model.rows[0]!;
    expect(row).toMatchObject({ operation: 'GetOrder', protocolBefore: 'grpc', protocolAfter: 'grpc' });
    // 4 points of 10/s, 15 s apart.
    expect(row.callsAfter).toBe(600);
    expect(row.lowCalls).toBe(false);
    expect(row.metrics[0]).toMatchObject({ metric: 'p99', before: 0.1, after: 0.05 });
    expect(row.metrics[0]!.delta).toEqual({ kind: 'relative', value: -0.5, verdict: 'better' });
  });

  it('pairs the one protocol left on each side: an operation that moved from REST to gRPC', () => {
    const model = build([
      ...promFrames('p99', [
        { labels: op('GetOrder', 'grpc'), values: steady(0.04) },
        { labels: op('GetOrder', 'connect'), values: steady(0.05) },
      ]),
      ...promFrames('p99_before', [
        { labels: op('GetOrder', 'rest'), values: steady(0.08) },
        { labels: op('GetOrder', 'connect'), values: steady(0.06) },
      ]),
    ]);
    expect(model.rows.map((r) => [r.protocolBefore, r.protocolAfter])).toEqual([
      ['connect', 'connect'],
      ['rest', 'grpc'],
    ]);
    expect(model.rows[1]!.metrics[0]!.delta!.value).toBeCloseTo(-0.5);
  });

  it('pairs an operation that moved from REST to tRPC, shown by its own name', () => {
    const model = build([
      ...promFrames('p99', [{ labels: op('GetOrder', 'trpc'), values: steady(0.09) }]),
      ...promFrames('p99_before', [{ labels: op('GetOrder', 'rest'), values: steady(0.1) }]),
    ]);
    expect(model.rows.map((r) => [r.protocolBefore, r.protocolAfter])).toEqual([['rest', 'trpc']]);
    expect(protocolPath(model.rows[0]!)).toBe('REST \u2192 tRPC');
  });

  it('flags rows where either side has too few calls', () => {
    const model = build([
      ...promFrames('p99', [{ labels: op('GetOrder', 'grpc'), values: steady(0.05) }]),
      ...promFrames('p99_before', [{ labels: op('GetOrder', 'grpc'), values: steady(0.1) }]),
      ...promFrames('rate', [{ labels: op('GetOrder', 'grpc'), values: steady(10) }]),
      ...promFrames('rate_before', [{ labels: op('GetOrder', 'grpc'), values: steady(0.5) }]),
    ]);
    expect(model.rows[0]).toMatchObject({ callsBefore: 30, callsAfter: 600, lowCalls: true });
  });

  it('counts calls from a rate grouped by operation alone', () => {
    const model = build([
      ...promFrames('p99', [{ labels: op('GetOrder', 'grpc'), values: steady(0.05) }]),
      ...promFrames('p99_before', [{ labels: op('GetOrder', 'grpc'), values: steady(0.1) }]),
      ...promFrames('rate', [{ labels: { operation: 'GetOrder' }, values: steady(1) }]),
      ...promFrames('rate_before', [{ labels: { operation: 'GetOrder' }, values: steady(1) }]),
    ], ['p99']);
    expect(model.rows).toHaveLength(1);
    expect(model.rows[0]).toMatchObject({ callsBefore: 60, callsAfter: 60, lowCalls: true });
  });

  it("reads Grafana's time comparison frames (refId-compare) as the before side", () => {
    const model = build(
      [
        ...promFrames('p99', [{ labels: op('GetOrder', 'grpc'), values: steady(0.05) }]),
        ...promFrames('p99-compare', [{ labels: op('GetOrder', 'grpc'), values: steady(0.1) }]),
      ],
      ['p99']
    );
    expect(model.callsKnown).toBe(false);
    expect(model.rows[0]!.metrics[0]).toMatchObject({ before: 0.1, after: 0.05 });
    expect(model.rows[0]!.lowCalls).toBe(false);
  });

  it('leaves out metrics with no value on either side', () => {
    const model = build([
      ...promFrames('p99', [{ labels: op('WatchOrders', 'grpc'), values: [Number.NaN] }]),
      ...promFrames('p99_before', [{ labels: op('WatchOrders', 'grpc'), values: [Number.NaN] }]),
      ...promFrames('rate', [{ labels: op('WatchOrders', 'grpc'), values: steady(2) }]),
      ...promFrames('rate_before', [{ labels: op('WatchOrders', 'grpc'), values: steady(2) }]),
    ]);
    expect(model.rows.map((r) => r.metrics.map((m) => m.metric))).toEqual([['rate']]);
  });

  it('keeps an operation seen on one side only, without a delta', () => {
    const model = build(
      [
        ...promFrames('p99', [{ labels: op('NewThing', 'grpc'), values: steady(0.05) }]),
        ...promFrames('p99_before', [{ labels: op('GetOrder', 'grpc'), values: steady(0.1) }]),
      ],
      ['p99']
    );
    expect(model.rows.map((r) => [r.operation, r.protocolBefore, r.protocolAfter, r.metrics[0]!.delta])).toEqual([
      ['GetOrder', 'grpc', null, null],
      ['NewThing', null, 'grpc', null],
    ]);
  });
});
