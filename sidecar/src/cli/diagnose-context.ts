// What every check of `rpcscope diagnose` shares: the Prometheus it asks, the
// workloads it looks at (--namespace, --service, --cluster as label matchers),
// the windows (--since, and --before for after-vs-before), one evaluation time
// for every query so that the figures of one run agree with each other, and
// the PromQL helpers that write those windows into a query.
import type { PrometheusApi, Sample } from './prometheus-api.ts';

/** A window of time ending `offsetSeconds` before the evaluation time. */
export interface Window {
  seconds: number;
  offsetSeconds: number;
  /** As the user wrote it: `30m`, `2h..1h`. */
  text: string;
}

export interface Scope {
  namespace?: string;
  service?: string;
  cluster?: string;
}

export interface DiagnoseSettings {
  scope: Scope;
  since: Window;
  before: Window | undefined;
  /** Calls a figure needs over its window before it is judged: a p99 of a dozen calls is noise. */
  minCalls: number;
  /** The protocol the others are compared with. */
  baseline: string;
  /** The sidecars' --metrics-detail: sets the series budget. */
  metricsDetail: 'basic' | 'standard' | 'full';
  /** The sidecars' admin port, when Prometheus's targets give another (a scrape through a proxy). */
  adminPort: number | undefined;
  /** The Authorization header for /debug/* (--admin-token-file). */
  adminHeaders: Record<string, string>;
}

/** The server-fault codes of the rules: the codes a server, not its caller, answers for. */
export const SERVER_FAULT_CODES = 'UNKNOWN|DEADLINE_EXCEEDED|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS';

export const serviceKey = (labels: Record<string, string>): string => `${labels.namespace ?? ''}/${labels.service ?? ''}`;

export class DiagnoseContext {
  /** Epoch seconds every query is evaluated at. */
  readonly time: number;
  private readonly matchers: string;

  constructor(readonly api: PrometheusApi, readonly settings: DiagnoseSettings, nowMs = Date.now()) {
    // Not rounded down: a scrape taken in the last second must not fall after the evaluation time.
    this.time = nowMs / 1000;
    const { namespace, service, cluster } = settings.scope;
    this.matchers = [
      namespace === undefined ? undefined : `namespace=${JSON.stringify(namespace)}`,
      service === undefined ? undefined : `service=${JSON.stringify(service)}`,
      cluster === undefined ? undefined : `cluster=${JSON.stringify(cluster)}`,
    ]
      .filter((m) => m !== undefined)
      .join(',');
  }

  /** `{scope,extra}`: the scope's matchers and the metric's own. */
  sel(extra = ''): string {
    return `{${[this.matchers, extra].filter((m) => m !== '').join(',')}}`;
  }

  /** `[1800s]`, with its offset for an earlier window. */
  range(w: Window = this.settings.since): string {
    return `[${w.seconds}s]${w.offsetSeconds > 0 ? ` offset ${w.offsetSeconds}s` : ''}`;
  }

  /**
   * A counter's growth over the window, per `by`, exactly as counted: its value
   * at the window's end less its value at the start; from 0 for a series born
   * inside the window (increase() would drop its first sample's calls and
   * extrapolate); and increase() only for a series that reset (a restarted
   * sidecar) or ended within it.
   */
  increase(metric: string, extra: string, by: string, w: Window = this.settings.since): string {
    const at = (offset: number): string => `${metric}${this.sel(extra)}${offset > 0 ? ` offset ${offset}s` : ''}`;
    const [end, start] = [at(w.offsetSeconds), at(w.offsetSeconds + w.seconds)];
    return `sum by (${by}) ((${end} - ${start} >= 0) or ((${end} unless ${start}) + 0) or increase(${metric}${this.sel(extra)}${this.range(w)}))`;
  }

  /**
   * A histogram over the window, per `by`, in whichever form Prometheus holds
   * it: `classic` from its `_bucket`/`_count` series (exact counts, as
   * increase() above), `or` the same from the native histogram (a sidecar run
   * with --histograms native scraped with native histograms on), which has no
   * such series; for any one sidecar only one half answers.
   */
  private eitherForm(classic: string, native: (h: string) => string, histogram: string, extra: string, by: string, w: Window): string {
    return `(${classic}) or (${native(`sum by (${by}) (increase(${histogram}${this.sel(extra)}${this.range(w)}))`)})`;
  }

  /** The q-quantile of a histogram over the window, per `by`. */
  quantile(q: number, histogram: string, extra: string, by: string, w: Window = this.settings.since): string {
    const classic = `histogram_quantile(${q}, ${this.increase(`${histogram}_bucket`, extra, `le, ${by}`, w)})`;
    return this.eitherForm(classic, (h) => `histogram_quantile(${q}, ${h})`, histogram, extra, by, w);
  }

  /** How many observations a histogram took over the window, per `by`. */
  observations(histogram: string, extra: string, by: string, w: Window = this.settings.since): string {
    return this.eitherForm(this.increase(`${histogram}_count`, extra, by, w), (h) => `histogram_count(${h})`, histogram, extra, by, w);
  }

  /**
   * How many of them were at most 1 (a ratio histogram's "within"), per `by`.
   * 1 is a bucket bound of the classic buckets and of every native schema, so
   * either form counts it exactly.
   */
  observationsAtMostOne(histogram: string, extra: string, by: string, w: Window = this.settings.since): string {
    const classicExtra = [extra, 'le=~"1|1.0"'].filter((m) => m !== '').join(',');
    return this.eitherForm(this.increase(`${histogram}_bucket`, classicExtra, by, w), (h) => `histogram_count(${h}) * histogram_fraction(-Inf, 1, ${h})`, histogram, extra, by, w);
  }

  query(expr: string): Promise<Sample[]> {
    return this.api.query(expr, this.time);
  }
}

/** Sums samples into a map by the key `key` gives their labels. */
export function sumBy(samples: readonly Sample[], key: (labels: Record<string, string>) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) if (Number.isFinite(s.value)) out.set(key(s.labels), (out.get(key(s.labels)) ?? 0) + s.value);
  return out;
}
