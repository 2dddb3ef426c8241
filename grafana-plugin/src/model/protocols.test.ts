import { promFrames } from '../../test-support/prometheus-frames';
import { buildProtocolMatrix, orderProtocols } from './protocols';
import { readSeries } from './series';

const op = (operation: string, protocol: string) => ({ operation, protocol });
const opts = { baseline: 'rest', reducer: 'mean' as const, relativeThreshold: 10, ratioThreshold: 0.5 };

const frames = [
  ...promFrames('p99', [
    { labels: op('GetOrder', 'rest'), values: [0.1, 0.1, 0.1] },
    { labels: op('GetOrder', 'grpc'), values: [0.06, 0.062, 0.064] },
    { labels: op('GetOrder', 'connect'), values: [0.104, 0.104, 0.104] },
    { labels: op('ListOrders', 'grpc'), values: [0.2, 0.2, 0.2] },
  ]),
  ...promFrames('rate', [
    { labels: op('GetOrder', 'rest'), values: [10, 10, 10] },
    { labels: op('GetOrder', 'grpc'), values: [30, 30, 30] },
    { labels: op('ListOrders', 'grpc'), values: [100, 100, 100] },
  ]),
  ...promFrames('errors', [
    { labels: op('GetOrder', 'rest'), values: [0.001, 0.001, 0.001] },
    { labels: op('GetOrder', 'grpc'), values: [0.02, 0.02, 0.02] },
  ]),
];

describe('buildProtocolMatrix', () => {
  const matrix = buildProtocolMatrix(readSeries(frames), { ...opts, metrics: ['p50', 'p99', 'rate', 'errors'] });

  it('puts the baseline first, then the protocols in the contract order', () => {
    expect(matrix.protocols).toEqual(['rest', 'grpc', 'connect']);
    expect(matrix.hasBaseline).toBe(true);
  });

  it('keeps only chosen metrics that have data, in the chosen order', () => {
    expect(matrix.metrics).toEqual(['p99', 'rate', 'errors']);
  });

  it('orders operations busiest first', () => {
    expect(matrix.operations.map((o) => [o.operation, o.rate])).toEqual([
      ['ListOrders', 100],
      ['GetOrder', 40],
    ]);
  });

  it('compares each cell with the baseline protocol of the same operation and metric', () => {
    const getOrder = matrix.operations.find((o) => o.operation === 'GetOrder')!;
    const p99 = getOrder.rows.find((r) => r.metric === 'p99')!;
    const [rest, grpc, connect] = p99.cells;
    expect(rest).toMatchObject({ protocol: 'rest', value: expect.closeTo(0.1, 10), delta: null });
    expect(grpc).toMatchObject({ protocol: 'grpc', value: expect.closeTo(0.062, 10) });
    expect(grpc!.delta).toEqual({ kind: 'relative', value: expect.closeTo(-0.38, 10), verdict: 'better' });
    expect(connect!.delta!.verdict).toBe('same');

    const errors = getOrder.rows.find((r) => r.metric === 'errors')!;
    expect(errors.cells[1]!.delta).toEqual({ kind: 'points', value: expect.closeTo(0.019, 10), verdict: 'worse' });
    // No connect series for errors: an empty cell, not a zero.
    expect(errors.cells[2]).toMatchObject({ value: null, series: null, delta: null });
  });

  it('leaves cells without a baseline value undiffed', () => {
    const listOrders = matrix.operations.find((o) => o.operation === 'ListOrders')!;
    expect(listOrders.rows[0]!.cells.map((c) => c.delta)).toEqual([null, null, null]);
  });

  it('leaves out metric rows, and operations, without a single value', () => {
    const m = buildProtocolMatrix(
      readSeries([
        ...promFrames('p99', [
          { labels: op('GetOrder', 'rest'), values: [0.1] },
          { labels: op('WatchOrders', 'grpc'), values: [null, null] },
        ]),
        ...promFrames('rate', [
          { labels: op('GetOrder', 'rest'), values: [5] },
          { labels: op('Quiet', 'grpc'), values: [Number.NaN] },
        ]),
      ]),
      { ...opts, metrics: ['p99', 'rate'] }
    );
    expect(m.operations.map((o) => [o.operation, o.rows.map((r) => r.metric)])).toEqual([['GetOrder', ['p99', 'rate']]]);
  });

  it('reports series it could not place', () => {
    const m = buildProtocolMatrix(
      readSeries([
        ...promFrames('p99', [{ labels: { operation: 'GetOrder' }, values: [1] }]),
        ...promFrames('p50', [
          { labels: op('GetOrder', 'grpc'), values: [1] },
          { labels: { ...op('GetOrder', 'grpc'), direction: 'outbound' }, values: [2] },
        ]),
      ]),
      { ...opts, metrics: ['p50', 'p99'] }
    );
    expect(m.unlabelled).toEqual(['p99']);
    expect(m.duplicates).toEqual(['p50 GetOrder/grpc']);
    expect(m.hasBaseline).toBe(false);
  });
});

describe('orderProtocols', () => {
  it('sorts unknown protocol values after the known ones', () => {
    expect(orderProtocols(['zzz', 'rest', 'grpc_web', 'grpc'], 'grpc')).toEqual(['grpc', 'grpc_web', 'rest', 'zzz']);
  });

  it('puts tRPC beside REST, after the gRPC family, and first when it is the baseline', () => {
    expect(orderProtocols(['trpc', 'rest', 'connect', 'grpc', 'grpc_web'], 'rest')).toEqual(['rest', 'grpc', 'grpc_web', 'connect', 'trpc']);
    expect(orderProtocols(['trpc', 'rest', 'grpc'], 'trpc')).toEqual(['trpc', 'grpc', 'rest']);
  });
});

describe('a tRPC procedure mapped onto the same operation', () => {
  const matrix = buildProtocolMatrix(
    readSeries([
      ...promFrames('p99', [
        { labels: op('GetOrder', 'rest'), values: [0.1, 0.1] },
        { labels: op('GetOrder', 'trpc'), values: [0.12, 0.12] },
        { labels: op('GetOrder', 'grpc'), values: [0.05, 0.05] },
      ]),
      ...promFrames('errors', [
        { labels: op('GetOrder', 'rest'), values: [0.01, 0.01] },
        { labels: op('GetOrder', 'trpc'), values: [0.03, 0.03] },
      ]),
    ]),
    { ...opts, metrics: ['p99', 'errors'] }
  );

  it('is a column of its own, compared with the baseline like any protocol', () => {
    expect(matrix.protocols).toEqual(['rest', 'grpc', 'trpc']);
    const [p99, errors] = matrix.operations[0]!.rows;
    expect(p99!.cells[2]).toMatchObject({ protocol: 'trpc', value: expect.closeTo(0.12, 10) });
    expect(p99!.cells[2]!.delta).toEqual({ kind: 'relative', value: expect.closeTo(0.2, 10), verdict: 'worse' });
    expect(errors!.cells[2]!.delta).toEqual({ kind: 'points', value: expect.closeTo(0.02, 10), verdict: 'worse' });
  });
});
