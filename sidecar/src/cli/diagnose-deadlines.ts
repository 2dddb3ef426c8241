// Deadlines: gRPC-family calls that carry none (by operation and the caller's
// protocol, with their share), deadline misses by who noticed them
// (detected_by), and operations whose callers' budgets sit under the p99 they
// get: misses waiting to happen.
import { serviceKey, type DiagnoseContext } from './diagnose-context.ts';
import { RUNBOOKS, type Finding } from './diagnose-finding.ts';
import { count, ms, pct } from './format.ts';

/** The share of an operation's gRPC-family calls without a deadline past which it is reported. */
const WITHOUT_SHARE = 0.05;
/** Calls without a deadline below this many are not reported whatever their share. */
const WITHOUT_MIN = 10;
/** Misses among calls that carried a deadline: reported past 2 %, critical past 20 %. */
const MISS_WARNING = 0.02;
const MISS_CRITICAL = 0.2;
const MISS_MIN = 5;
/** The p99 call uses at least this much of its budget: the budget sits at or under the p99. */
const BUDGET_USED_P99 = 0.9;

const GRPC_FAMILY = 'protocol=~"grpc|grpc_web|connect"';

interface Row {
  namespace: string;
  service: string;
  direction: string;
  protocol: string;
  method: string;
}
const rowKey = (l: Record<string, string>): string => [l.namespace, l.service, l.direction, l.protocol, l.method].join('\u0000');
const rowOf = (l: Record<string, string>): Row => ({ namespace: l.namespace ?? '', service: l.service ?? '', direction: l.direction ?? '', protocol: l.protocol ?? '', method: l.method ?? '' });

export async function withoutDeadline(ctx: DiagnoseContext): Promise<Finding[]> {
  const by = 'namespace, service, direction, protocol, method';
  const withoutQuery = ctx.increase('rpcscope_calls_without_deadline_total', '', by);
  const callsQuery = ctx.increase('rpcscope_calls_total', GRPC_FAMILY, `${by}, operation`);
  const [without, calls] = await Promise.all([ctx.query(withoutQuery), ctx.query(callsQuery)]);
  const totals = new Map<string, { calls: number; operation: string }>();
  for (const s of calls) {
    const k = rowKey(s.labels);
    const t = totals.get(k) ?? { calls: 0, operation: s.labels.operation ?? '' };
    t.calls += s.value;
    totals.set(k, t);
  }
  const byService = new Map<string, Array<Row & { operation: string; without: number; calls: number; share: number }>>();
  for (const s of without) {
    const t = totals.get(rowKey(s.labels));
    if (t === undefined || t.calls <= 0) continue;
    const share = Math.min(1, s.value / t.calls);
    if (s.value < WITHOUT_MIN || share < WITHOUT_SHARE) continue;
    const key = serviceKey(s.labels);
    byService.set(key, [...(byService.get(key) ?? []), { ...rowOf(s.labels), operation: t.operation, without: s.value, calls: t.calls, share }]);
  }
  return [...byService].map(([key, rows]) => {
    rows.sort((a, b) => b.without - a.without);
    const total = rows.reduce((a, r) => a + r.without, 0);
    const inbound = rows.some((r) => r.direction === 'inbound');
    return {
      kind: 'calls_without_deadline',
      severity: 'warning',
      namespace: rows[0]!.namespace,
      service: rows[0]!.service,
      title: `${count(total)} gRPC-family calls to ${key} carried no deadline: ${rows.slice(0, 3).map((r) => `${r.operation} over ${r.protocol} ${pct(r.share)}`).join(', ')}`,
      saw: rows.map((r) => `${r.direction} ${r.operation} (${r.method}) over ${r.protocol}: ${count(r.without)} of ${count(r.calls)} calls without a deadline, ${pct(r.share)}`),
      figures: { rows: rows.map((r) => ({ direction: r.direction, operation: r.operation, method: r.method, protocol: r.protocol, without_deadline: Math.round(r.without), calls: Math.round(r.calls), share: r.share })) },
      why: 'A call without a deadline can hold a stream, a server thread and its memory for as long as the server hangs; when the upstream slows down such calls pile up instead of failing fast, and nothing upstream can shed them.',
      remedy: [
        inbound
          ? 'set a deadline on the callers\' stubs for these operations (grpc-go context.WithTimeout, grpc-js { deadline }, connect timeoutMs)'
          : 'set a deadline on this pod\'s own client for these operations',
        ...(inbound ? [`or end such calls at the edge: --enforce-deadlines on ${key}'s inbound sidecars (RPCSCOPE_ENFORCE_DEADLINES=true) ends calls at the deadline they do carry`] : []),
      ],
      runbook: RUNBOOKS.withoutDeadline,
      series: ['rpcscope_calls_without_deadline_total', 'rpcscope_calls_total'],
      queries: [withoutQuery, callsQuery],
      score: Math.max(...rows.map((r) => r.share)) / WITHOUT_SHARE,
    } satisfies Finding;
  });
}

export async function deadlineMisses(ctx: DiagnoseContext): Promise<Finding[]> {
  const by = 'namespace, service, protocol, method';
  const missesQuery = ctx.increase('rpcscope_deadline_exceeded_total', 'direction="inbound"', `${by}, detected_by`);
  const carriedQuery = ctx.observations('rpcscope_deadline_used_ratio', 'direction="inbound"', by);
  const inTimeQuery = ctx.observationsAtMostOne('rpcscope_deadline_used_ratio', 'direction="inbound"', by);
  const [misses, carried, inTime] = await Promise.all([ctx.query(missesQuery), ctx.query(carriedQuery), ctx.query(inTimeQuery)]);
  const key4 = (l: Record<string, string>): string => [l.namespace, l.service, l.protocol, l.method].join('\u0000');
  const inTimeBy = new Map(inTime.map((s) => [key4(s.labels), s.value]));
  const detectedBy = new Map<string, Record<string, number>>();
  for (const s of misses) {
    if (s.value <= 0) continue;
    const d = detectedBy.get(key4(s.labels)) ?? {};
    d[s.labels.detected_by ?? ''] = (d[s.labels.detected_by ?? ''] ?? 0) + s.value;
    detectedBy.set(key4(s.labels), d);
  }
  const byService = new Map<string, Array<{ protocol: string; method: string; carried: number; missed: number; ratio: number; detected: Record<string, number> }>>();
  for (const s of carried) {
    const missed = s.value - (inTimeBy.get(key4(s.labels)) ?? 0);
    if (s.value <= 0 || missed < MISS_MIN || missed / s.value < MISS_WARNING) continue;
    const key = serviceKey(s.labels);
    byService.set(key, [...(byService.get(key) ?? []), { protocol: s.labels.protocol ?? '', method: s.labels.method ?? '', carried: s.value, missed, ratio: missed / s.value, detected: detectedBy.get(key4(s.labels)) ?? {} }]);
  }
  return [...byService].map(([key, rows]) => {
    rows.sort((a, b) => b.ratio - a.ratio);
    const worst = rows[0]!;
    const [namespace, service] = key.split('/') as [string, string];
    const detectedText = (d: Record<string, number>): string => Object.entries(d).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${count(v)}`).join(', ') || 'none counted';
    return {
      kind: 'deadline_misses',
      severity: worst.ratio >= MISS_CRITICAL ? 'critical' : 'warning',
      namespace,
      service,
      title: `${pct(worst.ratio)} of ${worst.method} calls over ${worst.protocol} to ${key} missed their deadline`,
      saw: rows.map((r) => `${r.method} over ${r.protocol}: ${count(r.missed)} of ${count(r.carried)} calls that carried a deadline finished after it (${pct(r.ratio)}); detected by ${detectedText(r.detected)}`),
      figures: { rows: rows.map((r) => ({ protocol: r.protocol, method: r.method, carried_deadline: Math.round(r.carried), missed: Math.round(r.missed), ratio: r.ratio, detected_by: r.detected })) },
      why: 'A call that misses its deadline is a failure its caller saw, and its work was wasted: client_cancel means the caller gave up and reset the stream, status that the upstream itself answered DEADLINE_EXCEEDED, late_response that the answer came after the caller had stopped waiting.',
      remedy: ['compare the operation\'s p99 with the budget its callers ask for: latency rose (the upstream is slow: its saturation and dependencies) or a caller shipped a tighter budget', `--enforce-deadlines on ${key}'s inbound sidecars stops the app working on calls whose callers are gone`],
      runbook: RUNBOOKS.deadlineMiss,
      series: ['rpcscope_deadline_exceeded_total', 'rpcscope_deadline_used_ratio'],
      queries: [missesQuery, carriedQuery, inTimeQuery],
      score: worst.ratio / MISS_WARNING,
    } satisfies Finding;
  });
}

export async function budgetsUnderP99(ctx: DiagnoseContext): Promise<Finding[]> {
  const by = 'namespace, service, protocol, method';
  const usedQuery = ctx.quantile(0.99, 'rpcscope_deadline_used_ratio', 'direction="inbound"', by);
  const budgetQuery = ctx.quantile(0.5, 'rpcscope_deadline_requested_seconds', 'direction="inbound"', by);
  const p99Query = ctx.quantile(0.99, 'rpcscope_call_duration_seconds', 'direction="inbound"', by);
  const countQuery = ctx.observations('rpcscope_deadline_used_ratio', 'direction="inbound"', by);
  const inTimeQuery = ctx.observationsAtMostOne('rpcscope_deadline_used_ratio', 'direction="inbound"', by);
  const [used, budgets, p99s, counts, inTime] = await Promise.all([ctx.query(usedQuery), ctx.query(budgetQuery), ctx.query(p99Query), ctx.query(countQuery), ctx.query(inTimeQuery)]);
  const key4 = (l: Record<string, string>): string => [l.namespace, l.service, l.protocol, l.method].join('\u0000');
  const budgetBy = new Map(budgets.map((s) => [key4(s.labels), s.value]));
  const p99By = new Map(p99s.map((s) => [key4(s.labels), s.value]));
  const countBy = new Map(counts.map((s) => [key4(s.labels), s.value]));
  const inTimeBy = new Map(inTime.map((s) => [key4(s.labels), s.value]));
  const byService = new Map<string, Array<{ protocol: string; method: string; used: number; budget: number; p99: number; calls: number }>>();
  for (const s of used) {
    const calls = countBy.get(key4(s.labels)) ?? 0;
    const missed = calls - (inTimeBy.get(key4(s.labels)) ?? calls);
    // Misses already past their own threshold are deadlineMisses' finding, not a warning of misses to come.
    if (!(s.value >= BUDGET_USED_P99) || calls < ctx.settings.minCalls || (missed >= MISS_MIN && missed / calls >= MISS_WARNING)) continue;
    const key = serviceKey(s.labels);
    byService.set(key, [...(byService.get(key) ?? []), { protocol: s.labels.protocol ?? '', method: s.labels.method ?? '', used: s.value, budget: budgetBy.get(key4(s.labels)) ?? NaN, p99: p99By.get(key4(s.labels)) ?? NaN, calls }]);
  }
  return [...byService].map(([key, rows]) => {
    rows.sort((a, b) => b.used - a.used);
    const [namespace, service] = key.split('/') as [string, string];
    return {
      kind: 'deadline_budget_under_p99',
      severity: 'warning',
      namespace,
      service,
      title: `callers of ${rows.map((r) => `${r.method} over ${r.protocol}`).slice(0, 3).join(', ')} at ${key} give budgets at or under the p99 they get`,
      saw: rows.map((r) => `${r.method} over ${r.protocol}: the p99 call uses ${pct(r.used, 0)} of its budget; budgets p50 ${ms(r.budget)}, latency p99 ${ms(r.p99)} (${count(r.calls)} calls with a deadline)`),
      figures: { rows: rows.map((r) => ({ protocol: r.protocol, method: r.method, budget_used_p99: r.used, budget_p50_seconds: r.budget, latency_p99_seconds: r.p99, calls: Math.round(r.calls) })) },
      why: 'When the slowest 1 % of calls take the whole budget, a little more latency upstream turns them into misses: these are deadline misses waiting to happen.',
      remedy: ['raise the callers\' budget above the operation\'s p99 with room to spare, or bring the p99 down (the slow calls\' upstream, payload size, retries)'],
      runbook: RUNBOOKS.deadlineMiss,
      series: ['rpcscope_deadline_used_ratio', 'rpcscope_deadline_requested_seconds', 'rpcscope_call_duration_seconds'],
      queries: [usedQuery, budgetQuery, p99Query],
      score: Math.max(...rows.map((r) => r.used)) / BUDGET_USED_P99,
    } satisfies Finding;
  });
}
