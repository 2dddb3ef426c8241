import { compare } from './delta';
import { formatDelta, formatValue, Units } from './format';
import { metricDef } from './metric-catalog';

const t = { relativeThreshold: 10, ratioThreshold: 0.5 };
const units: Units = { latencyUnit: 'auto', bytesUnit: 'iec', rateUnit: 'per_second' };

describe('compare', () => {
  it('reads a lower latency as better and says by how much', () => {
    const d = compare(0.062, 0.1, metricDef('p99'), t);
    expect(d).toEqual({ kind: 'relative', value: expect.closeTo(-0.38, 10), verdict: 'better' });
    expect(formatDelta(d, 'latency', units)).toBe('\u221238 %');
  });

  it('calls a change inside the threshold the same', () => {
    expect(compare(0.105, 0.1, metricDef('p99'), t).verdict).toBe('same');
    expect(compare(0.111, 0.1, metricDef('p99'), t).verdict).toBe('worse');
  });

  it('compares ratios in percentage points', () => {
    const d = compare(0.012, 0.002, metricDef('errors'), t);
    expect(d.kind).toBe('points');
    expect(d.verdict).toBe('worse');
    expect(formatDelta(d, 'ratio', units)).toBe('+1.00 pp');
    expect(compare(0.004, 0.002, metricDef('errors'), t).verdict).toBe('same');
  });

  it('shows a change that rounds to nothing without a sign', () => {
    expect(formatDelta(compare(0.09996, 0.1, metricDef('p99'), t), 'latency', units)).toBe('0 %');
    expect(formatDelta(compare(0.00201, 0.002, metricDef('errors'), t), 'ratio', units)).toBe('0 pp');
    expect(formatDelta(compare(0.0996, 0.1, metricDef('p99'), t), 'latency', units)).toBe('\u22120.4 %');
  });

  it('never colours call rate, which is load rather than quality', () => {
    expect(compare(20, 10, metricDef('rate'), t).verdict).toBe('neutral');
  });

  it('gives the plain difference when the baseline is zero', () => {
    const d = compare(0.5, 0, metricDef('resets'), t);
    expect(d).toEqual({ kind: 'absolute', value: 0.5, verdict: 'worse' });
    expect(formatDelta(d, 'per_second', units)).toBe('+0.5/s');
    expect(compare(0, 0, metricDef('resets'), t).verdict).toBe('same');
  });
});

describe('formatValue', () => {
  it.each([
    [0.0123, 'latency', { latencyUnit: 'auto' }, '12.3 ms'],
    [0.1, 'latency', { latencyUnit: 'auto' }, '100 ms'],
    [0.00042, 'latency', { latencyUnit: 'auto' }, '420 µs'],
    [2.5, 'latency', { latencyUnit: 'auto' }, '2.5 s'],
    [0.0123, 'latency', { latencyUnit: 'ms' }, '12.3 ms'],
    [1.5, 'latency', { latencyUnit: 'ms' }, '1500 ms'],
    [0.0123, 'latency', { latencyUnit: 's' }, '0.0123 s'],
    [42.5, 'rate', {}, '42.5/s'],
    [2, 'rate', { rateUnit: 'per_minute' }, '120/min'],
    [0.0052, 'ratio', {}, '0.52%'],
    [2048, 'bytes', {}, '2.0 KiB'],
    [2048, 'bytes', { bytesUnit: 'si' }, '2.0 kB'],
    [null, 'bytes', {}, '–'],
  ] as const)('%p %s %j → %s', (value, kind, u, expected) => {
    expect(formatValue(value, kind, { ...units, ...u })).toBe(expected);
  });
});
