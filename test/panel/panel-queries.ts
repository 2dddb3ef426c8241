// The queries a dashboard gives the panel, per mode, keyed by the refIds of the query contract
// in grafana-plugin/README.md. `w` stands where Grafana would put $__rate_interval.

export interface PanelQuery {
  refId: string;
  expr: string;
}

const CALLS = 'rpcscope_calls_total{direction="inbound"}';

export function protocolQueries(w: string, offset = '', suffix = ''): PanelQuery[] {
  const o = offset ? ` offset ${offset}` : '';
  // Classic buckets or the native histogram, as the dashboards ask (deploy/README.md, "Native histograms").
  const quantile = (q: string) =>
    `histogram_quantile(${q}, sum by (operation, protocol, le) (rate(rpcscope_call_duration_seconds_bucket{direction="inbound"}[${w}]${o}))) or ` +
    `histogram_quantile(${q}, sum by (operation, protocol) (rate(rpcscope_call_duration_seconds{direction="inbound"}[${w}]${o})))`;
  const ratio = (selector: string) =>
    `sum by (operation, protocol) (rate(rpcscope_calls_total{direction="inbound", ${selector}}[${w}]${o})) / sum by (operation, protocol) (rate(${CALLS}[${w}]${o}))`;
  const meanBytes = (flow: string) =>
    `sum by (operation, protocol) (rate(rpcscope_call_bytes_total{direction="inbound", flow="${flow}"}[${w}]${o})) / sum by (operation, protocol) (rate(rpcscope_calls_total{direction="inbound"}[${w}]${o}))`;
  return [
    { refId: 'p50', expr: quantile('0.5') },
    { refId: 'p95', expr: quantile('0.95') },
    { refId: 'p99', expr: quantile('0.99') },
    { refId: 'rate', expr: `sum by (operation, protocol) (rate(${CALLS}[${w}]${o}))` },
    { refId: 'errors', expr: ratio('code!="OK"') },
    { refId: 'deadline_miss', expr: ratio('code="DEADLINE_EXCEEDED"') },
    {
      refId: 'resets',
      expr: `sum by (operation, protocol) (rate(rpcscope_stream_resets_total{direction="inbound"}[${w}]${o}) * on (direction, protocol, method) group_left (operation) group by (direction, protocol, method, operation) (${CALLS}${o}))`,
    },
    { refId: 'req_bytes', expr: meanBytes('request') },
    { refId: 'resp_bytes', expr: meanBytes('response') },
  ].map((q) => ({ refId: q.refId + suffix, expr: q.expr }));
}

/** The current range's queries and the same queries `offset` earlier, refIds suffixed _before. */
export function beforeAfterQueries(w: string, offset: string): PanelQuery[] {
  return [...protocolQueries(w), ...protocolQueries(w, offset, '_before')];
}

/** The transcoded column's queries (grafana-plugin/README.md, "The transcoded column"). */
export function transcodedQueries(w: string): PanelQuery[] {
  const translation = (q: string) =>
    `histogram_quantile(${q}, sum by (le) (rate(rpcscope_translation_seconds_bucket{translation="rest_to_grpc"}[${w}])))`;
  return [
    { refId: 'transcoded', expr: `sum by (operation) (rate(rpcscope_translated_calls_total{translation="rest_to_grpc"}[${w}]))` },
    { refId: 'translation_p50', expr: translation('0.5') },
    { refId: 'translation_p99', expr: translation('0.99') },
  ];
}

export function podQueries(w: string): PanelQuery[] {
  const perPod = `sum by (pod) (rate(${CALLS}[${w}]))`;
  return [
    { refId: 'rate', expr: perPod },
    { refId: 'connections', expr: 'sum by (pod) (rpcscope_connections_active{side="downstream"})' },
    { refId: 'calls_per_connection', expr: `${perPod} / sum by (pod) (rpcscope_connections_active{side="downstream"})` },
    { refId: 'skew', expr: `max(${perPod}) / avg(${perPod})` },
  ];
}
