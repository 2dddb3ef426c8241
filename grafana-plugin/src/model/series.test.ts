import { createDataFrame, FieldType } from '@grafana/data';
import { framesFromPrometheus, matrix } from '../../test-support/prometheus-frames';
import { integrateRate, readSeries, reduce, stepMs } from './series';

describe('readSeries', () => {
  it('groups Prometheus frames by refId and keeps each series its labels, times and values', () => {
    const frames = [
      ...framesFromPrometheus(
        'p99',
        matrix(
          [
            { labels: { operation: 'GetOrder', protocol: 'grpc' }, values: [0.01, 0.02, null, 0.04] },
            { labels: { operation: 'GetOrder', protocol: 'rest' }, values: [0.03, 0.03, 0.03, 0.03] },
          ],
          1_700_000_000,
          15
        )
      ),
      ...framesFromPrometheus('rate', matrix([{ labels: { operation: 'GetOrder', protocol: 'grpc' }, values: [5, 6] }], 1_700_000_000, 15)),
    ];
    const byRefId = readSeries(frames);
    expect([...byRefId.keys()]).toEqual(['p99', 'rate']);
    const grpc = byRefId.get('p99')![0]!;
    expect(grpc.labels).toEqual({ operation: 'GetOrder', protocol: 'grpc' });
    // The missing step is absent from the series, as Prometheus sends it.
    expect(Array.from(grpc.times)).toEqual([1_700_000_000_000, 1_700_000_015_000, 1_700_000_045_000]);
    expect(Array.from(grpc.values)).toEqual([0.01, 0.02, 0.04]);
  });

  it('reads a table-format frame as one series per row, labels from the string columns', () => {
    const frame = createDataFrame({
      refId: 'rate',
      fields: [
        { name: 'Time', type: FieldType.time, values: [1000, 1000] },
        { name: 'operation', type: FieldType.string, values: ['GetOrder', 'ListOrders'] },
        { name: 'protocol', type: FieldType.string, values: ['grpc', 'rest'] },
        { name: 'Value #rate', type: FieldType.number, values: [12, 3] },
      ],
    });
    const list = readSeries([frame]).get('rate')!;
    expect(list.map((s) => [s.labels, Array.from(s.values)])).toEqual([
      [{ operation: 'GetOrder', protocol: 'grpc' }, [12]],
      [{ operation: 'ListOrders', protocol: 'rest' }, [3]],
    ]);
  });

  it('reads every labelled number field of a wide frame', () => {
    const frame = createDataFrame({
      refId: 'share',
      fields: [
        { name: 'Time', type: FieldType.time, values: [1, 2] },
        { name: 'a', type: FieldType.number, values: [0.5, 0.6], labels: { pod: 'a' } },
        { name: 'b', type: FieldType.number, values: [0.5, 0.4], labels: { pod: 'b' } },
      ],
    });
    expect(readSeries([frame]).get('share')!.map((s) => s.labels.pod)).toEqual(['a', 'b']);
  });
});

describe('reduce', () => {
  const values = [2, null, Number.NaN, 6, 4, undefined];
  it.each([
    ['mean', 4],
    ['last', 4],
    ['max', 6],
  ] as const)('%s skips missing points', (reducer, expected) => {
    expect(reduce(values, reducer)).toBe(expected);
  });

  it('is null for a series without a finite point', () => {
    expect(reduce([null, Number.NaN], 'mean')).toBeNull();
    expect(reduce([], 'last')).toBeNull();
  });
});

describe('integrateRate', () => {
  it('counts each point of a rate series as one step of calls', () => {
    const s = { refId: 'rate', labels: {}, times: [0, 15_000, 30_000, 60_000], values: [2, 2, null, 4] };
    expect(stepMs(s.times)).toBe(15_000);
    expect(integrateRate(s, 3600)).toBe((2 + 2 + 4) * 15);
  });

  it('counts an instant value over the whole range', () => {
    expect(integrateRate({ refId: 'rate', labels: {}, times: [5000], values: [3] }, 600)).toBe(1800);
  });
});
