// What the sidecars' `shadow answer differs` warnings say: per operation, the
// fields the mismatches were first found in, with the values of one of them.
// The counter tells how often the shadow differs; only the log says where.
// A JSON answer (REST) names a path, `$.carrier`; a gRPC answer, compared
// byte for byte, only `body (byte N)`: the path is preferred as the example.

export interface ShadowDifference {
  /** The example: a JSON path when any warning named one. */
  field: string;
  primary: string;
  shadow: string;
  /** Every field the operation's warnings named, in the order first seen. */
  fields: string[];
  /** Warnings logged for the operation (at most one per sidecar every 10 s). */
  lines: number;
}

const isPath = (field: string): boolean => field.startsWith('$');

/** `operation` -> what its warnings named, from the sidecars' stderr (JSON lines). */
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
      const seen = { field: entry.field, primary: String(entry.primary ?? ''), shadow: String(entry.shadow ?? '') };
      const d = (out[entry.operation] ??= { ...seen, fields: [], lines: 0 });
      d.lines++;
      if (!d.fields.includes(seen.field)) d.fields.push(seen.field);
      if (isPath(seen.field) && !isPath(d.field)) Object.assign(d, seen);
    }
  }
  return out;
}
