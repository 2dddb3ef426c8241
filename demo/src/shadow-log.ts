// What the sidecars' `shadow answer differs` warnings say: per operation, the
// first differing field of the latest mismatch logged and both values. The
// counter tells how often the shadow differs; only the log says where.

export interface ShadowDifference {
  field: string;
  primary: string;
  shadow: string;
  /** Warnings logged for the operation (at most one per sidecar every 10 s). */
  lines: number;
}

/** `operation` -> its latest logged difference, from the sidecars' stderr (JSON lines). */
export function shadowDifferences(logs: readonly string[]): Record<string, ShadowDifference> {
  const out: Record<string, ShadowDifference> = {};
  for (const log of logs) {
    for (const line of log.split('\n')) {
      if (!line.includes('"shadow answer differs"')) continue;
      let entry: { operation?: unknown; field?: unknown; primary?: unknown; shadow?: unknown };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      if (typeof entry.operation !== 'string' || typeof entry.field !== 'string') continue;
      const lines = (out[entry.operation]?.lines ?? 0) + 1;
      out[entry.operation] = { field: entry.field, primary: String(entry.primary ?? ''), shadow: String(entry.shadow ?? ''), lines };
    }
  }
  return out;
}
