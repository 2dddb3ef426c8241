// Histogram bucket boundaries: part of the metric contract (docs/metrics.md), since
// alert rules and dashboards query `le` values. Change them as you would a name.

/** Call latency, docs/metrics.md "0.0005 … 30 s": fine below 10 ms, where sidecar overhead and fast RPCs live. */
export const CALL_DURATION_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Call latency at the standard detail level: 5 ms to 2.5 s in seven steps, dense
 * where RPCs live; every boundary is one of the full set, so a quantile
 * compared across levels lands on shared edges.
 */
export const CALL_DURATION_SECONDS_STANDARD = [0.005, 0.025, 0.05, 0.1, 0.25, 1, 2.5];

/** Call latency at the basic detail level: enough for a p50/p99 to tell fast, slow and stuck apart. */
export const CALL_DURATION_SECONDS_BASIC = [0.01, 0.1, 0.5, 2.5];

/** Body sizes, docs/metrics.md "64 B … 64 MiB": powers of 4. */
export const PAYLOAD_BYTES = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** Stream lifetimes, docs/metrics.md "0.01 s … 3600 s": from a short server stream to an hour-long watch. */
export const STREAM_DURATION_SECONDS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600, 1800, 3600];

/** What the sidecar adds to a call: tens of microseconds when healthy, milliseconds when it is the problem. */
export const PROXY_OVERHEAD_SECONDS = [0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1];

/** Deadlines callers ask for: from tight intra-cluster budgets to long batch calls. */
export const DEADLINE_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Elapsed / requested, docs/metrics.md "0.1 … 2": dense around 1, where a call goes from close call to miss. */
export const DEADLINE_USED_RATIO = [0.1, 0.25, 0.5, 0.75, 0.9, 1, 1.25, 1.5, 2];

/** Connection lifetimes: a connection max-age is minutes; sticky HTTP/2 connections live for days. */
export const CONNECTION_DURATION_SECONDS = [1, 10, 60, 300, 900, 1800, 3600, 21600, 86400];

/** Calls per connection: the sticky-HTTP/2 signature is a few connections in the top buckets. */
export const CONNECTION_CALLS = [1, 10, 100, 1000, 10000, 100000, 1000000];

/** Event loop delay: above 10 ms every proxied call is paying for it. */
export const EVENT_LOOP_DELAY_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
