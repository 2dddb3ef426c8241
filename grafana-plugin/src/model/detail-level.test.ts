import { detailNotices } from './detail-level';
import { metricDef } from './metric-catalog';
import { SeriesByRefId } from './series';

const some: SeriesByRefId = new Map([['p99', [{ refId: 'p99', labels: {}, times: [1], values: [0.1] }]]]);

describe('detailNotices', () => {
  it('names the level a payload percentile query needs when it returns nothing', () => {
    const expr = 'histogram_quantile(0.99, sum by (operation, protocol, le) (rate(rpcscope_payload_bytes_bucket{flow="response"}[5m])))';
    const notices = detailNotices([{ refId: 'resp_p99', expr }], some);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.message).toContain('resp_p99 needs a higher detail level');
    expect(notices[0]!.message).toContain('--metrics-detail full');
    expect(notices[0]!.message).toContain('rpcscope_call_bytes_total');
  });

  it('names it for latency by code', () => {
    const expr = 'histogram_quantile(0.99, sum by (code, le) (rate(rpcscope_call_duration_seconds_bucket[5m])))';
    expect(detailNotices([{ refId: 'by_code', expr }], some)[0]?.message).toContain('latency by status code');
    const native = 'histogram_quantile(0.99, sum by (code) (rate(rpcscope_call_duration_seconds[5m])))';
    expect(detailNotices([{ refId: 'by_code', expr: native }], some)[0]?.message).toContain('latency by status code');
  });

  it('says nothing for the default queries, for queries with data, or without an expression', () => {
    // Classic or native, as the panel's documented query reads either.
    const p99 = metricDef('p99').example;
    const bytes = 'sum by (operation, protocol) (rate(rpcscope_call_bytes_total{flow="request"}[5m])) / sum by (operation, protocol) (rate(rpcscope_calls_total[5m]))';
    const errors = 'sum by (operation, protocol) (rate(rpcscope_calls_total{code!="OK"}[5m]))';
    expect(detailNotices([{ refId: 'p50', expr: p99 }, { refId: 'req_bytes', expr: bytes }, { refId: 'errors', expr: errors }, { refId: 'x' }], new Map())).toEqual([]);
    expect(detailNotices([{ refId: 'p99', expr: 'rate(rpcscope_payload_bytes_sum[5m])' }], some)).toEqual([]);
  });
});
