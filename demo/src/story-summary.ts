// The end of the story in figures: what rpcscope measured (from the sidecars'
// /metrics) beside what the traffic script did (its own tallies of every call),
// as text for the reader and as JSON for a test.
import type { MetricsHistory } from './metrics-history.ts';
import { GRPC_FAMILY } from './story-callers.ts';
import { balancedFigures, edgeFigures, podFigures, protocolRows, PROTOCOL_NAMES, shortOperation, sum, type ProtocolRow } from './story-figures.ts';
import { migrationFigures, renderMigration, type MigrationFigures } from './story-migration.ts';
import { callsPerPod, maxOverMean, type CallTally, type StoryTimeline } from './story-traffic.ts';
import { bytes, ms, pct } from './story-view.ts';

/** The operation whose protocols the summary compares: the one every protocol carries most. */
export const COMPARED_OPERATION = 'GetOrder';

export interface StorySummary {
  durationS: number;
  rpcscope: {
    /** The compared operation per protocol over the whole run. */
    comparison: Array<Pick<ProtocolRow, 'protocol' | 'calls' | 'p50' | 'p99' | 'errorRatio' | 'responseBytes'>>;
    /** ListOrders' mean response per protocol: the 1,000-order list. */
    listBytes: Record<string, number>;
    /** Calls per operation and protocol over the run: tRPC's procedures under their gRPC and REST twins' operation. */
    calls: Record<string, Record<string, number>>;
    pinned: { pod: string; shareBefore: number; skewBefore: number; skewAfter: number; shareAfter: number };
    /** The pinned and the healed stretches, in s from the start; the rollout's end, or null when the run ended first. */
    windows: { before: [number, number]; after: [number, number]; rolledOutS: number | null };
    /** The outbound sidecar's answered calls per pod before the remedy and after the rollout. */
    balanced: { skew: number; loadSkew: number };
    resets: Record<string, number>;
    goawaysSent: number;
    deadlineMisses: number;
    withoutDeadline: number;
    /** The rehearsal: the split's transcoded calls and the shadow's comparisons. */
    migration: MigrationFigures;
  };
  script: {
    /**
     * Calls of the compared operation per protocol (both clients), those
     * answered by a pod (an `x-pod` came back: a sidecar carried them, so it
     * counted them) and those answered OK.
     */
    comparison: Record<string, { calls: number; answered: number; ok: number }>;
    pinnedPod: string;
    skewBefore: number;
    skewAfter: number;
    balancedSkew: number;
    /** gRPC-family calls with a deadline that ended DEADLINE_EXCEEDED. */
    deadlineMisses: number;
    cancelledStreams: number;
    withoutDeadline: number;
    /** Of those, the ones a pod answered. */
    withoutDeadlineAnswered: number;
    /** REST calls of the split operation (the storefront's), and those a pod answered. */
    splitRestCalls: number;
    splitRestAnswered: number;
    /** Calls per protocol. */
    byProtocol: Record<string, number>;
    /** Calls per operation and protocol, and those a pod answered. */
    byOperation: Record<string, Record<string, { calls: number; answered: number }>>;
    calls: number;
  };
}

export interface SummaryInput {
  history: MetricsHistory;
  tallies: readonly CallTally[];
  timeline: StoryTimeline;
  startedMs: number;
  pods: readonly string[];
  outbound: string;
  /** When the last pod's sidecar came back with the remedy (epoch ms); undefined when the run ended first. */
  rolledOutMs: number | undefined;
  /** The pods' sidecars' --split. */
  split: { operation: string; percent: number };
  /** stderr of every pod's sidecar, for the shadow's logged differences. */
  podLogs: readonly string[];
}

/**
 * From the end of the rollout to the healed state: the connections opened
 * during it are to remedied sidecars, which age them out within 1 s.
 */
const HEAL_MS = 1000;

export function summarize(i: SummaryInput): StorySummary {
  const { history: h, tallies, timeline, startedMs } = i;
  const end = h.latestMs();
  const abs = (w: [number, number]): [number, number] => [startedMs + w[0], startedMs + w[1]];
  const [b0, b1] = abs(timeline.before);
  // Up to the traffic's end: the run may go on a little for the rollout and the last scrape.
  const lastCallMs = Math.min(end - startedMs, timeline.durationMs);
  const afterWindow: [number, number] = i.rolledOutMs === undefined ? timeline.after : [Math.min(i.rolledOutMs - startedMs + HEAL_MS, lastCallMs), lastCallMs];
  const [a0, a1] = abs(afterWindow);
  const before = podFigures(h, i.pods, b0, b1);
  const after = podFigures(h, i.pods, a0, Math.min(a1, end));
  // The script's own counts over the spans the sidecars' readings cover.
  const rel = ([from, to]: [number, number]): [number, number] => [from - startedMs, to - startedMs];
  const beforeRead = rel(h.spanOf(b0, b1));
  const afterRead = rel(h.spanOf(a0, Math.min(a1, end)));
  const rows = protocolRows(h, startedMs, end);
  const edges = edgeFigures(h, startedMs, end, i.pods);
  // Outside the rollout: while a pod's sidecar restarts it is out of service
  // on purpose, and a balancer that avoids it is right to; the figure is the
  // spread over the pods that serve.
  const steady: Array<[number, number]> = [[0, timeline.remedyMs], ...(i.rolledOutMs === undefined ? [] : [[i.rolledOutMs - startedMs, lastCallMs] as [number, number]])];
  const perEndpoint: Record<string, number> = {};
  for (const [from, to] of steady) {
    for (const [k, n] of Object.entries(balancedFigures(h, i.outbound, startedMs + from, startedMs + to).perEndpoint)) perEndpoint[k] = (perEndpoint[k] ?? 0) + n;
  }
  const balanced = { skew: maxOverMean(Object.values(perEndpoint)), loadSkew: balancedFigures(h, i.outbound, startedMs, end).loadSkew };
  const scriptSteady = tallies.filter((t) => t.code === 'OK' && steady.some(([from, to]) => t.endedMs >= from && t.endedMs < to));

  // Both clients' calls reach the pods' inbound sidecars.
  const compared = tallies.filter((t) => t.operation === COMPARED_OPERATION);
  const scriptComparison: Record<string, { calls: number; answered: number; ok: number }> = {};
  for (const t of compared) {
    const c = (scriptComparison[t.protocol] ??= { calls: 0, answered: 0, ok: 0 });
    c.calls++;
    if (t.pod !== '') c.answered++;
    if (t.code === 'OK') c.ok++;
  }
  const grpcBefore = callsPerPod(
    tallies.filter((t) => t.protocol === 'grpc'),
    i.pods,
    timeline.before,
    'storefront',
  );
  const splitRest = tallies.filter((t) => t.protocol === 'rest' && t.operation === shortOperation(i.split.operation));
  const scriptPinned = Object.entries(grpcBefore).sort((x, y) => y[1] - x[1])[0]?.[0] ?? '';
  const pinnedPod = before.top;
  const shareOf = (f: typeof before, pod: string): number => f.rows.find((r) => r.pod === pod)?.share ?? 0;

  return {
    durationS: Math.round((end - startedMs) / 1000),
    rpcscope: {
      comparison: rows
        .filter((r) => r.operation === COMPARED_OPERATION)
        .map(({ protocol, calls, p50, p99, errorRatio, responseBytes }) => ({ protocol, calls, p50, p99, errorRatio, responseBytes })),
      // The storefront's list only: the web app's tRPC pages list 20 orders.
      listBytes: Object.fromEntries(rows.filter((r) => r.operation === 'ListOrders' && r.protocol !== 'trpc').map((r) => [r.protocol, r.responseBytes])),
      calls: rows.reduce<Record<string, Record<string, number>>>((o, r) => (((o[r.operation] ??= {})[r.protocol] = r.calls), o), {}),
      pinned: { pod: pinnedPod, shareBefore: shareOf(before, pinnedPod), skewBefore: before.skew, skewAfter: after.skew, shareAfter: shareOf(after, pinnedPod) },
      windows: {
        before: [timeline.before[0] / 1000, timeline.before[1] / 1000],
        after: [Math.round(afterWindow[0] / 100) / 10, Math.round(afterWindow[1] / 100) / 10],
        rolledOutS: i.rolledOutMs === undefined ? null : Math.round((i.rolledOutMs - startedMs) / 100) / 10,
      },
      balanced: { skew: balanced.skew, loadSkew: balanced.loadSkew },
      resets: edges.resets,
      goawaysSent: edges.goawaysSent,
      deadlineMisses: sum(edges.deadlineMisses),
      withoutDeadline: edges.withoutDeadline,
      migration: migrationFigures(h, i.pods, i.split, i.podLogs, startedMs, end),
    },
    script: {
      comparison: scriptComparison,
      pinnedPod: scriptPinned,
      skewBefore: maxOverMean(Object.values(callsPerPod(tallies, i.pods, beforeRead))),
      skewAfter: maxOverMean(Object.values(callsPerPod(tallies, i.pods, afterRead))),
      balancedSkew: maxOverMean(Object.values(callsPerPod(scriptSteady, i.pods, [0, Infinity], 'backoffice'))),
      deadlineMisses: tallies.filter((t) => t.deadline && t.code === 'DEADLINE_EXCEEDED').length,
      cancelledStreams: tallies.filter((t) => t.scenario === 'watch-cancel').length,
      withoutDeadline: tallies.filter((t) => GRPC_FAMILY.includes(t.protocol) && !t.deadline).length,
      withoutDeadlineAnswered: tallies.filter((t) => GRPC_FAMILY.includes(t.protocol) && !t.deadline && t.pod !== '').length,
      splitRestCalls: splitRest.length,
      splitRestAnswered: splitRest.filter((t) => t.pod !== '').length,
      byProtocol: tallies.reduce<Record<string, number>>((o, t) => ((o[t.protocol] = (o[t.protocol] ?? 0) + 1), o), {}),
      byOperation: tallies.reduce<Record<string, Record<string, { calls: number; answered: number }>>>((o, t) => {
        const c = ((o[t.operation] ??= {})[t.protocol] ??= { calls: 0, answered: 0 });
        c.calls++;
        if (t.pod !== '') c.answered++;
        return o;
      }, {}),
      calls: tallies.length,
    },
  };
}

/** The summary as a reader takes it in. */
export function renderSummary(s: StorySummary): string {
  const r = s.rpcscope;
  const out: string[] = [];
  out.push(`rpcscope demo: ${s.durationS} s, ${s.script.calls} calls by the traffic script`);
  out.push('');
  out.push(`${COMPARED_OPERATION} by protocol (the 18-field order, about 1.2 kB as JSON), as rpcscope measured it:`);
  const rows = r.comparison.map((c) => [
    PROTOCOL_NAMES[c.protocol] ?? c.protocol,
    `${Math.round(c.calls)} calls`,
    `p50 ${ms(c.p50)}`,
    `p99 ${ms(c.p99)}`,
    `errors ${pct(c.errorRatio)}`,
    `response ${bytes(c.responseBytes)}`,
    `(script: ${s.script.comparison[c.protocol]?.calls ?? 0} calls)`,
  ]);
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]!.length))) ?? [];
  for (const row of rows) out.push(`  ${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ')}`);
  const rest = r.comparison.find((c) => c.protocol === 'rest');
  const grpc = r.comparison.find((c) => c.protocol === 'grpc');
  if (rest && grpc) {
    out.push(`  gRPC against REST: p50 ${ms(grpc.p50)} vs ${ms(rest.p50)}, p99 ${ms(grpc.p99)} vs ${ms(rest.p99)}, response ${bytes(grpc.responseBytes)} vs ${bytes(rest.responseBytes)}`);
  }
  const list = Object.entries(r.listBytes).map(([p, b]) => `${PROTOCOL_NAMES[p] ?? p} ${bytes(b)}`);
  if (list.length) out.push(`  ListOrders, the 1,000-order list: ${list.join(', ')} per response`);
  out.push('  (p50/p99 come from the latency histogram\'s buckets, so close values share a bucket edge; response is the mean body per call, errors included)');
  out.push('');
  out.push('Migration rehearsal on the pods\' sidecars, as rpcscope measured it:');
  for (const line of renderMigration(r.migration)) out.push(`  ${line}`);
  out.push(`  (script: ${s.script.splitRestCalls} REST ${shortOperation(r.migration.split.operation)} calls, ${s.script.splitRestAnswered} answered by a pod; ${s.script.byProtocol.trpc ?? 0} tRPC calls by the web app)`);
  out.push('');
  const w = r.windows;
  const span = (x: [number, number]): string => `${Math.round(x[0])}–${Math.round(x[1])} s`;
  out.push(`Pinned pod: ${r.pinned.pod} took ${pct(r.pinned.shareBefore)} of the calls once gRPC's one connection carried the storefront (${span(w.before)}): skew ${r.pinned.skewBefore.toFixed(2)}`);
  out.push(
    w.rolledOutS === null || w.after[1] - w.after[0] < 1
      ? '  the run ended before --max-connection-age 1s was rolled out to every pod and had time to work: run it longer'
      : `  after --max-connection-age 1s (rolled out by ${Math.round(w.rolledOutS)} s; ${span(w.after)}): ${r.pinned.pod} ${pct(r.pinned.shareAfter)}, skew ${r.pinned.skewAfter.toFixed(2)}`,
  );
  out.push(`  the clients' own count (x-pod of each answer): ${s.script.pinnedPod}, skew ${s.script.skewBefore.toFixed(2)} -> ${s.script.skewAfter.toFixed(2)}`);
  out.push(
    `Balanced client: outside the rollout, the outbound sidecar spread its calls with skew ${r.balanced.skew.toFixed(2)} (rpcscope_load_skew_ratio ${Number.isFinite(r.balanced.loadSkew) ? r.balanced.loadSkew.toFixed(2) : '–'}; script ${s.script.balancedSkew.toFixed(2)})`,
  );
  out.push('');
  const resets = Object.entries(r.resets)
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k.replace(' | ', ' ')} ${n}`);
  out.push(`Resets by side and code: ${resets.join(', ') || 'none'}; GOAWAY sent by the sidecars ${r.goawaysSent} (script cancelled ${s.script.cancelledStreams} streams)`);
  out.push('  client resets are clients giving up on a call (a missed deadline, a watcher leaving its stream); the GOAWAYs are the rollout and the connection age');
  out.push(`Deadline misses: ${r.deadlineMisses} (script ${s.script.deadlineMisses}); gRPC-family calls without a deadline: ${r.withoutDeadline} (script ${s.script.withoutDeadline})`);
  return out.join('\n');
}
