export type Mode = 'protocols' | 'beforeAfter' | 'pods';

/**
 * The `protocol` label values of docs/metrics.md, in the order columns are shown: the gRPC family
 * (one .proto, three wire formats), then the JSON-over-HTTP APIs, REST and tRPC, which teams weigh
 * against each other and against gRPC.
 */
export const PROTOCOLS = ['grpc', 'grpc_web', 'connect', 'rest', 'trpc'] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export type MetricKey = 'p50' | 'p95' | 'p99' | 'rate' | 'errors' | 'deadline_miss' | 'resets' | 'req_bytes' | 'resp_bytes';

/** How a series over the time range becomes the one number a cell shows. */
export type Reducer = 'mean' | 'last' | 'max';

export type LatencyUnit = 'auto' | 'ms' | 's';
export type BytesUnit = 'iec' | 'si';
export type RateUnit = 'per_second' | 'per_minute';

/** Table order: largest significant change first, busiest first, or by name. */
export type SortBy = 'change' | 'calls' | 'name';

export interface PanelOptions {
  mode: Mode;
  /** Protocol the other columns are compared with (protocols mode). */
  baseline: string;
  /** Metrics shown, in this order (protocols and before/after modes). */
  metrics: MetricKey[];
  reducer: Reducer;
  /** A relative delta smaller than this many percent is shown as "same", not better or worse. */
  relativeThreshold: number;
  /** A ratio (errors, deadline misses) moving by fewer percentage points than this is "same". */
  ratioThreshold: number;
  /** Before/after: fewer calls than this on either side makes the delta unreliable. */
  minCalls: number;
  /** Pods: a skew (max / mean call rate) at or above this is flagged. */
  skewThreshold: number;
  /** Pods: the label naming the pod or endpoint; empty picks the first of pod, upstream, instance. */
  podLabel: string;
  latencyUnit: LatencyUnit;
  bytesUnit: BytesUnit;
  rateUnit: RateUnit;
  showSparklines: boolean;
  /** Protocols and before/after: the order of the table's operations. */
  sortBy: SortBy;
}
