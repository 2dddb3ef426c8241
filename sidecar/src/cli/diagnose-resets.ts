// Reset storms and GOAWAYs, by side and code, told apart by what they mean:
// clients cancelling (at their deadlines, or their users leaving), an upstream
// refusing streams (REFUSED_STREAM, ENHANCE_YOUR_CALM: overload or concurrency
// limits), the sidecar cutting abusive clients (rpcscope_connections_terminated_total),
// and upstreams lost (their resets of other codes, their GOAWAYs with an error,
// the sidecar's own resets toward callers).
import { serviceKey, sumBy, type DiagnoseContext } from './diagnose-context.ts';
import { RUNBOOKS, type Finding, type FindingKind } from './diagnose-finding.ts';
import { count, pct } from './format.ts';

/** Client cancels are ordinary one by one: reported past 5 % of the calls. */
const CANCEL_SHARE = 0.05;
/** Refusals and lost upstreams are not: past 1 %. */
const UPSTREAM_SHARE = 0.01;
/** Fewer resets than this in the window are not a storm whatever the share. */
const MIN_RESETS = 10;
/** A fifth of the calls reset is critical. */
const CRITICAL_SHARE = 0.2;
/** Connections the sidecar cut for these reasons are ordinary housekeeping, not abuse. */
const HOUSEKEEPING = new Set(['idle_timeout', 'first_byte_timeout']);

interface Tally {
  namespace: string;
  service: string;
  calls: number;
  resets: Map<string, number>; // `side/CODE` -> resets
  goaways: Map<string, number>; // `side/CODE` -> GOAWAY frames
  cut: Map<string, number>; // reason -> connections
  cancelsAtDeadline: number;
}

export async function resetStorms(ctx: DiagnoseContext): Promise<Finding[]> {
  const by = 'namespace, service';
  const resetsQuery = ctx.increase('rpcscope_stream_resets_total', '', `${by}, side, error_code`);
  const goawaysQuery = ctx.increase('rpcscope_http2_goaways_total', '', `${by}, side, error_code`);
  const cutQuery = ctx.increase('rpcscope_connections_terminated_total', '', `${by}, reason`);
  const callsQuery = ctx.increase('rpcscope_calls_total', '', by);
  const atDeadlineQuery = ctx.increase('rpcscope_deadline_exceeded_total', 'detected_by="client_cancel"', by);
  const [resets, goaways, cut, calls, atDeadline] = await Promise.all([resetsQuery, goawaysQuery, cutQuery, callsQuery, atDeadlineQuery].map((q) => ctx.query(q)));
  const tallies = new Map<string, Tally>();
  const tally = (l: Record<string, string>): Tally => {
    const key = serviceKey(l);
    let t = tallies.get(key);
    if (t === undefined) {
      t = { namespace: l.namespace ?? '', service: l.service ?? '', calls: 0, resets: new Map(), goaways: new Map(), cut: new Map(), cancelsAtDeadline: 0 };
      tallies.set(key, t);
    }
    return t;
  };
  for (const [k, v] of sumBy(calls!, serviceKey)) tally({ namespace: k.split('/')[0]!, service: k.split('/')[1]! }).calls = v;
  for (const s of resets!) if (s.value > 0) tally(s.labels).resets.set(`${s.labels.side}/${s.labels.error_code}`, s.value);
  for (const s of goaways!) if (s.value > 0) tally(s.labels).goaways.set(`${s.labels.side}/${s.labels.error_code}`, s.value);
  for (const s of cut!) if (s.value > 0 && !HOUSEKEEPING.has(s.labels.reason ?? '')) tally(s.labels).cut.set(s.labels.reason ?? '', s.value);
  for (const s of atDeadline!) tally(s.labels).cancelsAtDeadline += s.value;

  const findings: Finding[] = [];
  const sumOf = (m: Map<string, number>, keep: (k: string) => boolean): number => [...m].filter(([k]) => keep(k)).reduce((a, [, v]) => a + v, 0);
  const listOf = (m: Map<string, number>, keep: (k: string) => boolean): string => [...m].filter(([k]) => keep(k)).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${count(v)}`).join(', ');
  const figuresOf = (m: Map<string, number>, keep: (k: string) => boolean): Record<string, number> => Object.fromEntries([...m].filter(([k]) => keep(k)).map(([k, v]) => [k, Math.round(v)]));
  const goawayLine = (t: Tally): string[] => (t.goaways.size === 0 ? [] : [`GOAWAYs by side/code: ${listOf(t.goaways, () => true)} (proxy/NO_ERROR is --max-connection-age or a drain, expected)`]);

  for (const [key, t] of tallies) {
    const calls = Math.max(t.calls, 1);
    const push = (kind: FindingKind, n: number, threshold: number, f: Omit<Finding, 'kind' | 'severity' | 'namespace' | 'service' | 'score'>): void => {
      if (n < MIN_RESETS || n / calls < threshold) return;
      findings.push({ kind, severity: n / calls >= CRITICAL_SHARE ? 'critical' : 'warning', namespace: t.namespace, service: t.service, score: n / calls / threshold, ...f });
    };
    const isClientCancel = (k: string): boolean => k === 'client/CANCEL' || k === 'client/CONNECTION_CLOSED';
    const cancels = sumOf(t.resets, isClientCancel);
    const atDeadline = Math.min(cancels, t.cancelsAtDeadline);
    push('client_cancels', cancels, CANCEL_SHARE, {
      title: `clients cancelled ${pct(cancels / calls)} of ${key}'s calls (${count(cancels)} resets): ${count(atDeadline)} at their deadline, ${count(cancels - atDeadline)} before it`,
      saw: [`client resets: ${listOf(t.resets, isClientCancel)} over ${count(t.calls)} calls`, `${count(atDeadline)} came as the call's deadline ran out (rpcscope_deadline_exceeded_total{detected_by="client_cancel"}); ${count(cancels - atDeadline)} before it: users or callers leaving`, ...goawayLine(t)],
      figures: { calls: Math.round(t.calls), resets: figuresOf(t.resets, isClientCancel), at_deadline: Math.round(atDeadline), before_deadline: Math.round(cancels - atDeadline), goaways: figuresOf(t.goaways, () => true) },
      why: 'Each cancel is work the app did for nobody. At the deadline, the callers\' budgets are under the latency they get; before it, users navigate away or a caller hedges and drops the slower answer.',
      remedy: ['at the deadline: see the deadline findings (raise the budget or bring the p99 down); before it: --enforce-deadlines on the inbound sidecars stops the app working past the callers\' budgets, and the app should stop work when its request context is cancelled'],
      runbook: RUNBOOKS.resets,
      series: ['rpcscope_stream_resets_total', 'rpcscope_deadline_exceeded_total', 'rpcscope_http2_goaways_total'],
      queries: [resetsQuery, atDeadlineQuery, goawaysQuery],
    });
    const isRefusal = (k: string): boolean => k === 'upstream/REFUSED_STREAM' || k === 'upstream/ENHANCE_YOUR_CALM';
    const refusals = sumOf(t.resets, isRefusal);
    push('upstream_refusing', refusals, UPSTREAM_SHARE, {
      title: `${key}'s app refused ${count(refusals)} streams (${pct(refusals / calls)} of its calls): ${listOf(t.resets, isRefusal)}`,
      saw: [`upstream resets: ${listOf(t.resets, isRefusal)} over ${count(t.calls)} calls`, ...goawayLine(t)],
      figures: { calls: Math.round(t.calls), resets: figuresOf(t.resets, isRefusal), goaways: figuresOf(t.goaways, () => true) },
      why: 'REFUSED_STREAM and ENHANCE_YOUR_CALM are the app saying it will not take more streams: its concurrency limit (SETTINGS_MAX_CONCURRENT_STREAMS) is reached, or it is shedding load. Callers retry refused streams, adding load where there is none to spare.',
      remedy: ['scale the app out or raise its stream limit (e.g. grpc-go MaxConcurrentStreams, Node http2 maxConcurrentStreams) if it has headroom; spread callers first if a pod is pinned (see the pinned-pod finding)'],
      runbook: RUNBOOKS.resets,
      series: ['rpcscope_stream_resets_total', 'rpcscope_http2_goaways_total'],
      queries: [resetsQuery, goawaysQuery],
    });
    const isLost = (k: string): boolean => (k.startsWith('upstream/') && !isRefusal(k) && k !== 'upstream/NO_ERROR' && k !== 'upstream/CANCEL') || k.startsWith('proxy/');
    const isLostGoaway = (k: string): boolean => k.startsWith('upstream/') && k !== 'upstream/NO_ERROR';
    const lost = sumOf(t.resets, isLost) + sumOf(t.goaways, isLostGoaway);
    push('upstream_lost', lost, UPSTREAM_SHARE, {
      title: `${key} lost calls to its upstream: ${count(lost)} resets and GOAWAYs with errors (${pct(lost / calls)} of its calls)`,
      saw: [`resets: ${listOf(t.resets, isLost) || 'none'}; GOAWAYs with an error: ${listOf(t.goaways, isLostGoaway) || 'none'}`],
      figures: { calls: Math.round(t.calls), resets: figuresOf(t.resets, isLost), goaways: figuresOf(t.goaways, isLostGoaway) },
      why: 'The app reset streams or closed its connection with an error mid-call: it crashed, was killed (OOM), restarted without draining, or hit a protocol error; every call in flight on it failed.',
      remedy: ['check the app container\'s restarts and logs at those times; give the app a preStop that waits for --drain-delay and a graceful shutdown that sends GOAWAY NO_ERROR before closing'],
      runbook: RUNBOOKS.resets,
      series: ['rpcscope_stream_resets_total', 'rpcscope_http2_goaways_total'],
      queries: [resetsQuery, goawaysQuery],
    });
    const cutN = [...t.cut.values()].reduce((a, b) => a + b, 0);
    if (cutN >= 1) {
      const reasons = [...t.cut].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${count(n)}`).join(', ');
      findings.push({
        kind: 'connections_cut',
        severity: 'warning',
        namespace: t.namespace,
        service: t.service,
        title: `${key}'s sidecars cut ${count(cutN)} client connections for abuse: ${reasons}`,
        saw: [`rpcscope_connections_terminated_total by reason: ${reasons}`, ...goawayLine(t)],
        figures: { connections: Object.fromEntries([...t.cut].map(([r, n]) => [r, Math.round(n)])), goaways: figuresOf(t.goaways, () => true) },
        why: 'A client flooded resets, PINGs, SETTINGS or other frames past the sidecar\'s budgets (the rapid-reset and CONTINUATION shapes), or sent requests the sidecar refuses: the sidecar ended its connection to protect everyone else. A buggy client looks the same as an attacker here.',
        remedy: ['find the client by its address in the sidecar\'s log and /debug/connections; each limit, its flag and its counter are in SECURITY.md'],
        runbook: RUNBOOKS.resets,
        series: ['rpcscope_connections_terminated_total', 'rpcscope_http2_goaways_total'],
        queries: [cutQuery, goawaysQuery],
        score: cutN,
      });
    }
  }
  return findings;
}
