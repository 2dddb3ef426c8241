// What `rpcscope top` shows, whichever source it reads (the sidecars' /metrics
// or Prometheus): per operation and protocol, the call rate, success ratio,
// p50/p99, calls in flight and bytes per call; per pod, its share of the calls
// and the skew across pods (max / mean, 1 is even).

export interface TopRow {
  operation: string;
  protocol: string;
  rate: number;
  success: number;
  p50: number;
  p99: number;
  active: number;
  bytesPerCall: number;
}

export interface PodRow {
  pod: string;
  rate: number;
  share: number;
}

export interface TopView {
  rows: TopRow[];
  pods: PodRow[];
  /** max / mean of the pods' rates; NaN with fewer than two pods. */
  skew: number;
  /** Sources that did not answer this time, each with why. */
  missing: string[];
}

/** Cumulative histogram buckets (`le` -> count) to the q-quantile, interpolated within the bucket as PromQL does. */
export function bucketQuantile(q: number, buckets: ReadonlyMap<number, number>): number {
  const les = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Infinity) ?? 0;
  if (total <= 0) return NaN;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const le of les) {
    const c = buckets.get(le)!;
    if (c >= rank) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / Math.max(c - prevCount, 1e-12);
    }
    prevLe = le;
    prevCount = c;
  }
  return NaN;
}

export function podRows(rates: ReadonlyMap<string, number>): { pods: PodRow[]; skew: number } {
  const total = [...rates.values()].reduce((a, b) => a + b, 0);
  const pods = [...rates].map(([pod, rate]) => ({ pod, rate, share: total > 0 ? rate / total : 0 })).sort((a, b) => b.rate - a.rate || a.pod.localeCompare(b.pod));
  const skew = pods.length >= 2 && total > 0 ? pods[0]!.rate / (total / pods.length) : NaN;
  return { pods, skew };
}
