import { SeriesByRefId } from './series';

/**
 * Series a sidecar exports only at `--metrics-detail full` (docs/metrics.md, "Detail levels and
 * cost"). The default level, standard, keeps every figure this panel shows by default; a query the
 * user points at one of these reads nothing from a standard sidecar, and the panel says why instead
 * of showing an empty cell.
 */
const FULL_ONLY: ReadonlyArray<{ pattern: RegExp; what: string; instead: string }> = [
  {
    pattern: /\brpcscope_payload_bytes(_bucket|_sum|_count)\b/,
    what: 'the payload size distribution (rpcscope_payload_bytes)',
    instead: 'mean sizes come from rpcscope_call_bytes_total / rpcscope_calls_total at every level',
  },
  {
    // Classic series or the native histogram itself (--histograms native).
    pattern: /\brpcscope_call_duration_seconds(_bucket|_sum|_count)?\b[^]*\bcode\b|\bcode\b[^]*\brpcscope_call_duration_seconds(_bucket|_sum|_count)?\b/,
    what: 'latency by status code (the code label of rpcscope_call_duration_seconds)',
    instead: 'codes are on rpcscope_calls_total at every level',
  },
];

export interface DetailNotice {
  refId: string;
  message: string;
}

/** For each query that returned no series and reads a full-only metric: what it needs. */
export function detailNotices(targets: ReadonlyArray<{ refId?: string; expr?: unknown }>, series: SeriesByRefId): DetailNotice[] {
  const notices: DetailNotice[] = [];
  for (const t of targets) {
    const refId = t.refId ?? '';
    if (typeof t.expr !== 'string' || (series.get(refId)?.length ?? 0) > 0) {
      continue;
    }
    const expr = t.expr;
    const need = FULL_ONLY.find((f) => f.pattern.test(expr));
    if (need) {
      notices.push({
        refId,
        message: `${refId} needs a higher detail level: ${need.what} is exported only by sidecars started with --metrics-detail full; ${need.instead}.`,
      });
    }
  }
  return notices;
}
