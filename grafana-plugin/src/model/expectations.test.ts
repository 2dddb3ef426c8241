import { promFrames } from '../../test-support/prometheus-frames';
import { diagnose } from './expectations';
import { readSeries } from './series';

const base = { metrics: ['p50', 'p99'] as Array<'p50' | 'p99'>, podLabel: '' };

describe('diagnose', () => {
  it('passes data each mode can draw', () => {
    const s = readSeries([
      ...promFrames('p99', [{ labels: { operation: 'A', protocol: 'grpc' }, values: [1] }]),
      ...promFrames('p99_before', [{ labels: { operation: 'A', protocol: 'grpc' }, values: [1] }]),
      ...promFrames('rate', [{ labels: { pod: 'a' }, values: [1] }]),
    ]);
    expect(diagnose(s, { ...base, mode: 'protocols' })).toBeNull();
    expect(diagnose(s, { ...base, mode: 'beforeAfter' })).toBeNull();
    expect(diagnose(s, { ...base, mode: 'pods' })).toBeNull();
  });

  it('says the queries returned nothing, and what protocols mode reads', () => {
    const d = diagnose(readSeries([]), { ...base, mode: 'protocols' })!;
    expect(d.problem).toBe('The queries returned no data.');
    expect(d.expectation.summary).toContain('refId p50, p99');
    expect(d.expectation.summary).toContain('operation and protocol');
    expect(d.expectation.queries.map((q) => q.refId)).toEqual(['p50', 'p99']);
    expect(d.expectation.queries[1]!.example).toContain('histogram_quantile(0.99, sum by (operation, protocol, le)');
    expect(d.expectation.queries[1]!.example).toContain(' or histogram_quantile(0.99, sum by (operation, protocol) (rate(rpcscope_call_duration_seconds{');
  });

  it('names the labels that are missing and lists what was found', () => {
    const d = diagnose(readSeries(promFrames('p99', [{ labels: { job: 'rpcscope', instance: 'x:9090' }, values: [1] }])), {
      ...base,
      mode: 'protocols',
    })!;
    expect(d.problem).toBe('The series of p99 lack the label operation or protocol.');
    expect(d.found).toEqual([{ refId: 'p99', labels: ['instance', 'job'] }]);
  });

  it('asks for the comparison queries in before/after mode', () => {
    const d = diagnose(readSeries(promFrames('p99', [{ labels: { operation: 'A', protocol: 'grpc' }, values: [1] }])), {
      ...base,
      mode: 'beforeAfter',
    })!;
    expect(d.problem).toContain('add p99_before');
    expect(d.expectation.queries.map((q) => q.refId)).toEqual(['p50', 'p50_before', 'p99', 'p99_before']);
    expect(d.expectation.queries[3]!.example).toContain('[$__rate_interval] offset 7d)');
  });

  it('asks for a pod label in pods mode', () => {
    const d = diagnose(readSeries(promFrames('rate', [{ labels: { job: 'x' }, values: [1] }])), { ...base, mode: 'pods' })!;
    expect(d.problem).toBe('The series of rate/share carry none of the labels pod, upstream, instance.');
    expect(d.expectation.queries[0]).toMatchObject({ refId: 'rate', labels: ['pod'] });
  });
});
