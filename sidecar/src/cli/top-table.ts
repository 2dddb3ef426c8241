// `top`'s table: sorted and filtered as the flags say, as a screen for a
// terminal or as plain timestamped lines for a pipe or a file.
import { bytes, ms, pct, perSecond } from './format.ts';
import type { TopRow, TopView } from './top-model.ts';

export const SORT_KEYS = ['rate', 'p99', 'p50', 'errors', 'active', 'bytes', 'operation'] as const;
export type SortKey = (typeof SORT_KEYS)[number];

export interface TableOptions {
  sort: SortKey;
  /** Only rows whose operation or protocol matches. */
  filter: RegExp | undefined;
  /** At most this many rows. */
  limit: number;
}

const num = (v: number): number => (Number.isFinite(v) ? v : -Infinity);

export function selectRows(rows: readonly TopRow[], o: TableOptions): TopRow[] {
  const by: Record<SortKey, (r: TopRow) => number | string> = {
    rate: (r) => num(r.rate),
    p99: (r) => num(r.p99),
    p50: (r) => num(r.p50),
    errors: (r) => (Number.isFinite(r.success) ? 1 - r.success : -Infinity),
    active: (r) => r.active,
    bytes: (r) => num(r.bytesPerCall),
    operation: (r) => `${r.operation} ${r.protocol}`,
  };
  const key = by[o.sort];
  return rows
    .filter((r) => o.filter === undefined || o.filter.test(r.operation) || o.filter.test(r.protocol))
    .filter((r) => r.rate > 0 || r.active > 0)
    .sort((a, b) => {
      const [x, y] = [key(a), key(b)];
      return typeof x === 'string' ? x.localeCompare(y as string) : (y as number) - x || a.operation.localeCompare(b.operation);
    })
    .slice(0, o.limit);
}

const COLUMNS = ['OPERATION', 'PROTOCOL', 'RATE', 'SUCCESS', 'P50', 'P99', 'ACTIVE', 'BYTES/CALL'];

function cells(r: TopRow): string[] {
  return [r.operation, r.protocol, perSecond(r.rate), Number.isFinite(r.success) ? pct(r.success) : '–', ms(r.p50), ms(r.p99), String(Math.round(r.active)), bytes(r.bytesPerCall)];
}

/** The table and the pods, as lines. */
export function renderTable(view: TopView, o: TableOptions, title: string): string[] {
  const rows = selectRows(view.rows, o).map(cells);
  const widths = COLUMNS.map((c, i) => Math.max(c.length, ...rows.map((r) => r[i]!.length)));
  const fmt = (r: string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  const lines = [title, '', fmt(COLUMNS), ...rows.map(fmt)];
  if (rows.length === 0) lines.push('(no calls in this interval)');
  if (view.pods.length > 0) {
    lines.push('', `PODS  skew ${Number.isFinite(view.skew) ? view.skew.toFixed(2) : '–'} (max / mean per-pod call rate; 1.00 is even)`);
    for (const p of view.pods) lines.push(`  ${p.pod.padEnd(24)} ${pct(p.share).padStart(8)}  ${perSecond(p.rate).padStart(8)}`);
  }
  for (const m of view.missing) lines.push(`! ${m}`);
  return lines;
}

/** One plain line per row, for a pipe: `time operation protocol rate=… success=…`. */
export function renderLines(view: TopView, o: TableOptions, at: Date): string[] {
  const t = at.toISOString();
  const lines = selectRows(view.rows, o).map(
    (r) => `${t} ${r.operation} ${r.protocol} rate=${r.rate.toFixed(2)} success=${Number.isFinite(r.success) ? r.success.toFixed(4) : '-'} p50_ms=${Number.isFinite(r.p50) ? (r.p50 * 1000).toFixed(1) : '-'} p99_ms=${Number.isFinite(r.p99) ? (r.p99 * 1000).toFixed(1) : '-'} active=${Math.round(r.active)} bytes_per_call=${Number.isFinite(r.bytesPerCall) ? Math.round(r.bytesPerCall) : '-'}`,
  );
  for (const p of view.pods) lines.push(`${t} pod ${p.pod} share=${p.share.toFixed(4)} rate=${p.rate.toFixed(2)} skew=${Number.isFinite(view.skew) ? view.skew.toFixed(2) : '-'}`);
  for (const m of view.missing) lines.push(`${t} missing ${m}`);
  return lines;
}
