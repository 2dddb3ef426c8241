// PromQL builders for the dashboards. Every metric name is from
// docs/metrics.md; test/deploy checks each expression parses, names only
// contract metrics, and returns data from a real Prometheus.

/** Matchers ANDed inside one selector; empty entries are dropped. */
export type Matchers = string[];

/** Every query's scope; `cluster` is absent with one cluster, which `=~".*"` (All) still matches. */
export const CLUSTER: Matchers = ['cluster=~"$cluster"'];
export const SCOPE: Matchers = [...CLUSTER, 'namespace=~"$namespace"', 'service=~"$service"', 'pod=~"$pod"'];
export const METHOD: Matchers = ['method=~"$method"'];
export const INBOUND: Matchers = ['direction="inbound"'];
export const DIRECTION: Matchers = ['direction=~"$direction"'];

export const RATE_WINDOW = '$__rate_interval';

/** Where in time a query looks: now, or `offset` back (the "before" side). */
export interface At {
  offset?: string;
}

const NOW: At = {};

function shift(at: At): string {
  return at.offset ? ` offset ${at.offset}` : '';
}

export function selector(metric: string, matchers: Matchers, at: At = NOW): string {
  return `${metric}{${matchers.filter(Boolean).join(', ')}}${shift(at)}`;
}

export function rate(metric: string, matchers: Matchers, at: At = NOW): string {
  return `rate(${metric}{${matchers.filter(Boolean).join(', ')}}[${RATE_WINDOW}]${shift(at)})`;
}

function by(labels: string[]): string {
  return labels.length ? ` by (${labels.join(', ')})` : '';
}

export function sumRate(labels: string[], metric: string, matchers: Matchers, at: At = NOW): string {
  return `sum${by(labels)} (${rate(metric, matchers, at)})`;
}

export function sumGauge(labels: string[], metric: string, matchers: Matchers, at: At = NOW): string {
  return `sum${by(labels)} (${selector(metric, matchers, at)})`;
}

/**
 * The histograms a sidecar started with `--histograms native` (or `both`)
 * serves as Prometheus native histograms (docs/metrics.md, "Native
 * histograms"); every other histogram family stays classic whatever the flag.
 */
export const NATIVE_HISTOGRAMS: ReadonlySet<string> = new Set([
  'rpcscope_call_duration_seconds',
  'rpcscope_stream_duration_seconds',
  'rpcscope_deadline_requested_seconds',
  'rpcscope_deadline_used_ratio',
]);

/**
 * A classic-histogram expression `or` its native twin, for the families a
 * sidecar may serve natively. No dashboard variable or switch: a Prometheus
 * holds one form of a family per target (a text scrape stores the `_bucket`
 * series, a protobuf scrape of `native`, or of `both` on 2.x without
 * `scrape_classic_histograms`, the native series), so the other side reads
 * nothing and the same dashboard serves either fleet. Both sides come out
 * with the same labels, so where a Prometheus keeps both forms the classic
 * one is shown, once.
 */
function eitherForm(histogram: string, classic: string, native: string): string {
  return NATIVE_HISTOGRAMS.has(histogram) ? `${classic}\n  or\n${native}` : classic;
}

/** The q-quantile of a histogram, per `labels`: from classic buckets by `le`, or a native histogram. */
export function quantile(q: number, labels: string[], histogram: string, matchers: Matchers, at: At = NOW): string {
  return eitherForm(
    histogram,
    `histogram_quantile(${q}, ${sumRate([...labels, 'le'], `${histogram}_bucket`, matchers, at)})`,
    `histogram_quantile(${q}, ${sumRate(labels, histogram, matchers, at)})`,
  );
}

/** Mean observed value of a histogram (sum / count), per `labels`. */
export function mean(labels: string[], histogram: string, matchers: Matchers, at: At = NOW): string {
  return `${sumRate(labels, `${histogram}_sum`, matchers, at)}\n  /\n${sumRate(labels, `${histogram}_count`, matchers, at)}`;
}

/**
 * A counter's increase per finished call, per `labels`: mean body bytes from
 * rpcscope_call_bytes_total, which every detail level exports (the size
 * histogram is `--metrics-detail full` only). `calls` narrows the call counter
 * the same way as `matchers` minus their counter-only labels (`flow`).
 */
export function perCall(labels: string[], counter: string, matchers: Matchers, calls: Matchers, at: At = NOW): string {
  return `${sumRate(labels, counter, matchers, at)}\n  /\n${sumRate(labels, 'rpcscope_calls_total', calls, at)}`;
}

/**
 * numerator / denominator per `labels`, where a group with no numerator series
 * (no errors yet, no misses yet) reads 0 rather than vanishing from the panel.
 */
export function ratio(
  labels: string[],
  numerator: { metric: string; matchers: Matchers },
  denominator: { metric: string; matchers: Matchers },
  at: At = NOW,
): string {
  const den = sumRate(labels, denominator.metric, denominator.matchers, at);
  return `(\n  ${sumRate(labels, numerator.metric, numerator.matchers, at)}\n    or\n  ${den} * 0\n)\n  /\n${den}`;
}

/**
 * A counter's rate per `labels` over the series `matchers` narrow, 0 rather
 * than absent for a group of `all` that has none (no mismatch yet reads 0).
 */
export function rateOrZero(labels: string[], metric: string, matchers: Matchers, all: Matchers): string {
  return `${sumRate(labels, metric, matchers)}\n  or\n${sumRate(labels, metric, all)} * 0`;
}

/**
 * Inbound calls per second per pod: the quantity the load balance is judged by.
 * Every sidecar exports target_info, so a pod that has not served a call yet
 * (the others, when one client sticks to one pod) is there at 0, not missing.
 */
export function podCallRate(scope: Matchers, at: At = NOW, callsOnly: Matchers = []): string {
  // callsOnly narrows the calls (by method) but not the target_info fallback,
  // which has no such label: an idle pod stays in whatever method is picked.
  // `cluster` keeps same-named pods of two clusters apart (absent with one cluster).
  const calls = sumRate(['cluster', 'namespace', 'service', 'pod'], 'rpcscope_calls_total', [...INBOUND, ...scope, ...callsOnly], at);
  return `(\n  ${calls}\n    or\n  0 * group by (cluster, namespace, service, pod) (${selector('target_info', scope, at)})\n)`;
}

/**
 * max / mean of the per-pod inbound call rate per service: the same figure as
 * the namespace_service:rpcscope_calls_total:pod_skew2m recording rule, computed
 * inline so the dashboards work on a Prometheus without rpcscope's rules.
 */
export function podSkew(scope: Matchers): string {
  const perPod = podCallRate(scope);
  return `max by (cluster, namespace, service) (\n  ${perPod}\n)\n  /\navg by (cluster, namespace, service) (\n  ${perPod}\n)`;
}

/** The same max / mean over every pod selected, as one series: the panel plugin's `skew` in pods mode. */
export function podSkewOverall(scope: Matchers): string {
  const perPod = podCallRate(scope);
  return `max (\n  ${perPod}\n)\n  /\navg (\n  ${perPod}\n)`;
}

/**
 * Stream resets per (operation, protocol). Resets carry `method`, not
 * `operation`; rpcscope_calls_total carries both, so it supplies the
 * method -> operation mapping (one operation per method and protocol).
 */
export function resetsByOperation(matchers: Matchers, callMatchers: Matchers, at: At = NOW): string {
  const resets = sumRate(['method', 'protocol'], 'rpcscope_stream_resets_total', matchers, at);
  const mapping = `group by (method, protocol, operation) (${selector('rpcscope_calls_total', callMatchers, at)})`;
  const calls = sumRate(['operation', 'protocol'], 'rpcscope_calls_total', callMatchers, at);
  return `sum by (operation, protocol) (\n  ${resets}\n    * on (method, protocol) group_left (operation)\n  ${mapping}\n)\n  or\n${calls} * 0`;
}

/**
 * Each pod's share of its own service's inbound calls (0..1), idle pods at 0.
 * The denominator is the whole service, whatever pods are picked.
 */
export function podShare(scope: Matchers, service: Matchers, callsOnly: Matchers): string {
  const total = `sum by (cluster, namespace, service) (\n  ${podCallRate(service, NOW, callsOnly)}\n)`;
  return `${podCallRate(scope, NOW, callsOnly)}\n  / ignoring (pod) group_left ()\n(${total} > 0)`;
}

/**
 * Misses among calls that carried a deadline over those calls, per `labels`:
 * both from rpcscope_deadline_used_ratio (count, less the le="1" bucket, or
 * one less a native histogram's share at or below 1), so
 * like is divided by like and the ratio never exceeds 1. (An upstream
 * DEADLINE_EXCEEDED on a call without a deadline is in
 * rpcscope_deadline_exceeded_total but not in any deadline count.)
 * Prometheus 3 writes the bound as "1.0".
 */
export function deadlineMissRatio(labels: string[], matchers: Matchers): string {
  const family = 'rpcscope_deadline_used_ratio';
  const count = sumRate(labels, `${family}_count`, matchers);
  const inTime = sumRate(labels, `${family}_bucket`, [...matchers, 'le=~"1|1.0"']);
  // Native: 1 is a bucket bound at every schema, so the share at or below it is exact.
  const native = sumRate(labels, family, matchers);
  return eitherForm(
    family,
    `(\n  ${count}\n    -\n  ${inTime}\n)\n  /\n(${count} > 0)`,
    `(\n  1 - histogram_fraction(-Inf, 1, ${native})\n)\n  and\n(histogram_count(${native}) > 0)`,
  );
}
