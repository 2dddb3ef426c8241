import { MetricKey } from '../types';

/**
 * What kind of quantity a metric is decides how it is formatted and compared:
 * ratios move in percentage points (0.1 % → 0.5 % is "+0.4 pp", not "+400 %"),
 * everything else relatively.
 */
export type MetricKind = 'latency' | 'rate' | 'ratio' | 'per_second' | 'bytes';

/** Which direction of change is an improvement; `none` for figures that are load, not quality. */
export type Better = 'lower' | 'higher' | 'none';

export interface MetricDef {
  key: MetricKey;
  /** Row label, and the word in a delta's tooltip ("p99 −38 % vs rest"). */
  label: string;
  kind: MetricKind;
  better: Better;
  /** PromQL for this refId, shown in the "what this mode expects" message and the README. */
  example: string;
}

const CALLS = 'rpcscope_calls_total{direction="inbound"}';
// Classic buckets `or` the native histogram (docs/metrics.md, "Native histograms"): a Prometheus
// holds one form per sidecar, so the same query reads either fleet.
const quantile = (q: string) =>
  `histogram_quantile(${q}, sum by (operation, protocol, le) (rate(rpcscope_call_duration_seconds_bucket{direction="inbound"}[$__rate_interval]))) or histogram_quantile(${q}, sum by (operation, protocol) (rate(rpcscope_call_duration_seconds{direction="inbound"}[$__rate_interval])))`;
const ratioOf = (selector: string) =>
  `sum by (operation, protocol) (rate(rpcscope_calls_total{direction="inbound", ${selector}}[$__rate_interval])) / sum by (operation, protocol) (rate(${CALLS}[$__rate_interval]))`;
// Byte counters, not the size histogram: they are exported at every --metrics-detail level.
const meanBytes = (flow: string) =>
  `sum by (operation, protocol) (rate(rpcscope_call_bytes_total{direction="inbound", flow="${flow}"}[$__rate_interval])) / sum by (operation, protocol) (rate(${CALLS}[$__rate_interval]))`;

export const METRICS: readonly MetricDef[] = [
  { key: 'p50', label: 'p50', kind: 'latency', better: 'lower', example: quantile('0.5') },
  { key: 'p95', label: 'p95', kind: 'latency', better: 'lower', example: quantile('0.95') },
  { key: 'p99', label: 'p99', kind: 'latency', better: 'lower', example: quantile('0.99') },
  {
    key: 'rate',
    label: 'calls',
    kind: 'rate',
    better: 'none',
    example: `sum by (operation, protocol) (rate(${CALLS}[$__rate_interval]))`,
  },
  { key: 'errors', label: 'errors', kind: 'ratio', better: 'lower', example: ratioOf('code!="OK"') },
  {
    key: 'deadline_miss',
    label: 'deadline miss',
    kind: 'ratio',
    better: 'lower',
    // Every call that ends after its deadline carries code DEADLINE_EXCEEDED (docs/metrics.md), and
    // rpcscope_calls_total has the operation label that rpcscope_deadline_exceeded_total lacks.
    example: ratioOf('code="DEADLINE_EXCEEDED"'),
  },
  {
    key: 'resets',
    label: 'resets',
    kind: 'per_second',
    better: 'lower',
    // Resets are counted per method; the join borrows each method's operation from the call counter.
    example:
      'sum by (operation, protocol) (rate(rpcscope_stream_resets_total{direction="inbound"}[$__rate_interval]) * on (direction, protocol, method) group_left (operation) group by (direction, protocol, method, operation) (rpcscope_calls_total{direction="inbound"}))',
  },
  { key: 'req_bytes', label: 'request size', kind: 'bytes', better: 'lower', example: meanBytes('request') },
  { key: 'resp_bytes', label: 'response size', kind: 'bytes', better: 'lower', example: meanBytes('response') },
];

export const METRIC_KEYS: readonly MetricKey[] = METRICS.map((m) => m.key);

const byKey = new Map(METRICS.map((m) => [m.key, m]));

export function metricDef(key: MetricKey): MetricDef {
  const def = byKey.get(key);
  if (!def) {
    throw new Error(`unknown metric ${key}`);
  }
  return def;
}

export function isMetricKey(value: string): value is MetricKey {
  return byKey.has(value as MetricKey);
}
