// The demo's terminal view: one screen redrawn every second on a terminal, one
// plain line a second otherwise (a log, a pipe, a CI job).
import type { MetricsHistory } from './metrics-history.ts';
import {
  balancedFigures,
  edgeFigures,
  phaseOf,
  podFigures,
  protocolRows,
  PROTOCOL_NAMES,
  SKEW_THRESHOLD,
  sum,
} from './story-figures.ts';
import { migrationFigures, renderMigration } from './story-migration.ts';
import { protocolShares, type StoryTimeline } from './story-traffic.ts';

/** Latency and rate windows: long enough to hold a p99, short enough to follow the story. */
const LATENCY_WINDOW_MS = 10_000;
const RATE_WINDOW_MS = 5_000;

export function ms(seconds: number): string {
  if (!Number.isFinite(seconds)) return '–';
  const v = seconds * 1000;
  return v < 10 ? `${v.toFixed(1)} ms` : `${Math.round(v)} ms`;
}

export function bytes(n: number): string {
  if (!Number.isFinite(n)) return '–';
  return n < 1000 ? `${Math.round(n)} B` : n < 1e6 ? `${(n / 1000).toFixed(1)} kB` : `${(n / 1e6).toFixed(2)} MB`;
}

export const pct = (x: number): string => (Number.isFinite(x) ? `${(x * 100).toFixed(x < 0.1 && x > 0 ? 1 : 0)} %` : '–');

export interface ViewState {
  history: MetricsHistory;
  timeline: StoryTimeline;
  startedMs: number;
  pods: readonly string[];
  outbound: string;
  /** The pod the migration pinned, once known. */
  pinned: string | undefined;
  /** The pod whose sidecar the rollout is restarting now. */
  restarting: string | undefined;
  rolledOut: boolean;
  /** When the rollout ended (epoch ms). */
  rolledOutMs: number | undefined;
  pageUrl: string | undefined;
  /** The pods' sidecars' --split, and their stderr so far (the shadow's logged differences). */
  split: { operation: string; percent: number };
  podLogs: () => readonly string[];
}

const BOLD = '\x1b[1m';
const DIM = '\x1b[2m';
const RED = '\x1b[31m';
const GREEN = '\x1b[32m';
const RESET = '\x1b[0m';

function table(rows: string[][], align: Array<'l' | 'r'>): string[] {
  const widths = align.map((_, i) => Math.max(...rows.map((r) => [...(r[i] ?? '')].length)));
  return rows.map((r) => r.map((c, i) => (align[i] === 'r' ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ').trimEnd());
}

/** The full screen, for a terminal. */
export function renderScreen(s: ViewState, color: boolean): string {
  const c = (code: string, text: string): string => (color ? `${code}${text}${RESET}` : text);
  const now = s.history.latestMs();
  const t = now - s.startedMs;
  const shares = protocolShares(t, s.timeline);
  const out: string[] = [];
  out.push(
    `${c(BOLD, 'rpcscope demo')}  ${Math.round(t / 1000)} s of ${Math.round(s.timeline.durationMs / 1000)} s  ·  ${phaseOf(t, s.timeline, s.rolledOut, s.restarting)}`,
  );
  out.push(c(DIM, `storefront traffic now: REST ${pct(shares.rest)}, gRPC ${pct(shares.grpc)}, Connect ${pct(shares.connect)}, gRPC-Web ${pct(shares.grpc_web)}`));
  if (s.pageUrl) out.push(`panel page: ${s.pageUrl}`);
  out.push('');

  out.push(c(BOLD, `operations by protocol`) + c(DIM, `  (inbound, last ${LATENCY_WINDOW_MS / 1000} s)`));
  // Unary calls only: a stream's lifetime is not a latency, and every watcher here leaves by cancelling (counted under resets).
  const rows = protocolRows(s.history, now - LATENCY_WINDOW_MS, now).filter((r) => Number.isFinite(r.p50));
  let lastOp = '';
  const body = rows.map((r) => {
    const op = r.operation === lastOp ? '' : r.operation;
    lastOp = r.operation;
    return [op, PROTOCOL_NAMES[r.protocol] ?? r.protocol, ms(r.p50), ms(r.p99), `${r.rate.toFixed(1)}/s`, pct(r.errorRatio), bytes(r.responseBytes)];
  });
  out.push(...table([['operation', 'protocol', 'p50', 'p99', 'rate', 'errors', 'response'], ...body], ['l', 'l', 'r', 'r', 'r', 'r', 'r']).map((l, i) => (i === 0 ? c(DIM, l) : l)));
  out.push(c(DIM, 'p50/p99 are read from the latency histogram\'s buckets (…, 25, 50, 100, 250 ms, 1 s, …) as histogram_quantile does;'));
  out.push(c(DIM, 'response is the mean body per call, errors included (bytes counter over calls counter)'));
  out.push('');

  const pods = podFigures(s.history, s.pods, now - RATE_WINDOW_MS, now);
  const pinnedNow = pods.skew >= SKEW_THRESHOLD ? pods.top : undefined;
  out.push(c(BOLD, 'pods behind the balancer') + c(DIM, `  (inbound calls, last ${RATE_WINDOW_MS / 1000} s)`));
  const podRows = pods.rows.map((p) => {
    const mark = p.pod === pinnedNow ? c(RED, '◀ pinned') : p.pod === s.pinned ? c(GREEN, 'was pinned') : '';
    const bar = '█'.repeat(Math.round(p.share * 30));
    return [p.pod, pct(p.share), `${p.rate.toFixed(1)}/s`, String(p.connections), `${bar} ${mark}`.trimEnd()];
  });
  out.push(...table([['pod', 'share', 'rate', 'conns', ''], ...podRows], ['l', 'r', 'r', 'r', 'l']).map((l, i) => (i === 0 ? c(DIM, l) : l)));
  const skewText = pods.skew.toFixed(2);
  out.push(
    `skew (max/mean) ${pods.skew >= SKEW_THRESHOLD ? c(RED, skewText) : c(GREEN, skewText)}` +
      c(DIM, `  1.00 is even, 3.00 one pod taking all; pinned from ${SKEW_THRESHOLD.toFixed(1)} (the rules' alert)`),
  );
  const balanced = balancedFigures(s.history, s.outbound, now - RATE_WINDOW_MS, now);
  out.push(`balanced client (outbound sidecar, round_robin per call): skew ${balanced.skew.toFixed(2)}, rpcscope_load_skew_ratio ${Number.isFinite(balanced.loadSkew) ? balanced.loadSkew.toFixed(2) : '–'}`);
  out.push('');

  out.push(c(BOLD, 'migration rehearsal') + c(DIM, '  (pods\' sidecars, since the start)'));
  out.push(...renderMigration(migrationFigures(s.history, s.pods, s.split, s.podLogs(), s.startedMs, now)));
  out.push('');

  const edges = edgeFigures(s.history, s.startedMs, now, s.pods);
  const resets = Object.entries(edges.resets)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k.replace(' | ', ' ')} ${n}`);
  out.push(`${c(BOLD, 'resets')} by side and code: ${resets.join(' · ') || 'none'}  ·  GOAWAY sent ${edges.goawaysSent}` + c(DIM, '  (since the start)'));
  out.push(c(DIM, '  client resets: clients giving up on a call (a missed deadline, a watcher leaving its stream); GOAWAY: the rollout and the connection age'));
  const misses = Object.entries(edges.deadlineMisses)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  out.push(`${c(BOLD, 'deadlines')}: missed ${sum(edges.deadlineMisses)}${misses.length ? ` (${misses.join(', ')})` : ''}  ·  gRPC-family calls without a deadline ${edges.withoutDeadline}`);
  out.push(c(DIM, 'Ctrl-C stops the demo'));
  return out.join('\n');
}

/** One line, for a log. */
export function renderLine(s: ViewState): string {
  const now = s.history.latestMs();
  const t = now - s.startedMs;
  const rows = protocolRows(s.history, now - LATENCY_WINDOW_MS, now).filter((r) => r.operation === 'GetOrder');
  const p99 = rows.map((r) => `${PROTOCOL_NAMES[r.protocol]} ${ms(r.p99)}`).join(', ');
  const pods = podFigures(s.history, s.pods, now - RATE_WINDOW_MS, now);
  const top = pods.rows.find((p) => p.pod === pods.top);
  const balanced = balancedFigures(s.history, s.outbound, now - RATE_WINDOW_MS, now);
  const edges = edgeFigures(s.history, s.startedMs, now, s.pods);
  const m = migrationFigures(s.history, s.pods, s.split, [], s.startedMs, now);
  return [
    `[${String(Math.round(t / 1000)).padStart(3)} s]`,
    `GetOrder p99 ${p99 || '–'}`,
    `top pod ${pods.top} ${pct(top?.share ?? 0)}${pods.skew >= SKEW_THRESHOLD ? ' (pinned)' : ''}, skew ${pods.skew.toFixed(2)}`,
    `balanced skew ${balanced.skew.toFixed(2)}`,
    `resets ${sum(edges.resets)}`,
    `deadline misses ${sum(edges.deadlineMisses)}`,
    `no deadline ${edges.withoutDeadline}`,
    `split ${Math.round(m.split.transcoded)}/${Math.round(m.split.restCalls)} transcoded`,
    `shadow ${Math.round(m.shadow.match)} match ${Math.round(m.shadow.mismatch)} mismatch`,
  ].join(' | ');
}
