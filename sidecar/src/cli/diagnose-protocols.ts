// Protocol comparison and migration regressions, per operation: each
// protocol's p50 and p99, error ratio (calls not OK, as the panel counts them)
// and response bytes per call against the baseline protocol in the same
// window; and with --before, the operation after against before, each side by
// the protocol that carried most of its calls, as the panel's before/after mode
// pairs them, so that a move from REST to gRPC compares gRPC now with REST then.
// Only a change for the worse past its threshold is a finding; call volume
// is never one (how many calls a protocol carries says nothing about it).
import type { DiagnoseContext, Window } from './diagnose-context.ts';
import { RUNBOOKS, type Finding, type Severity } from './diagnose-finding.ts';
import { bytes, change, count, ms, pct } from './format.ts';

/** Latency is worse past +50 % and 25 ms (one standard bucket), critical past +100 % and 100 ms. */
const LATENCY = { relative: 0.5, absolute: 0.025, criticalRelative: 1, criticalAbsolute: 0.1 };
/** Errors are worse past +2 points and twice the reference, critical past +10 points. */
const ERRORS = { points: 0.02, factor: 2, criticalPoints: 0.1 };
/**
 * A quantile is compared only where each side holds at least this many calls
 * past it (p50 from 10 calls, p99 from 500): a p99 of 150 calls is the time of
 * one or two of them, which one GC pause or a busy node sets, and a healthy
 * fleet on a loaded machine read as a regression.
 */
const TAIL_CALLS = 5;
/** Bytes per call are worse past 1.5 times and 256 B more. */
const BYTES = { factor: 1.5, absolute: 256 };

export interface ProtocolFigures {
  calls: number;
  p50: number;
  p99: number;
  errorRatio: number;
  bytesPerCall: number;
}

type Table = Map<string, Map<string, Map<string, ProtocolFigures>>>; // service -> operation -> protocol -> figures

interface Change {
  metric: 'p50' | 'p99' | 'errors' | 'bytes_per_call';
  reference: number;
  value: number;
  text: string;
  severity: Severity;
  score: number;
}

function queries(ctx: DiagnoseContext, w: Window): Record<'calls' | 'p50' | 'p99' | 'bytes', string> {
  const by = 'namespace, service, operation, protocol';
  return {
    calls: ctx.increase('rpcscope_calls_total', 'direction="inbound"', `${by}, code`, w),
    p50: ctx.quantile(0.5, 'rpcscope_call_duration_seconds', 'direction="inbound"', by, w),
    p99: ctx.quantile(0.99, 'rpcscope_call_duration_seconds', 'direction="inbound"', by, w),
    bytes: ctx.increase('rpcscope_call_bytes_total', 'direction="inbound",flow="response"', by, w),
  };
}

async function table(ctx: DiagnoseContext, w: Window): Promise<Table> {
  const q = queries(ctx, w);
  const [calls, p50, p99, respBytes] = await Promise.all([ctx.query(q.calls), ctx.query(q.p50), ctx.query(q.p99), ctx.query(q.bytes)]);
  const out: Table = new Map();
  const cell = (l: Record<string, string>): ProtocolFigures => {
    const svc = `${l.namespace ?? ''}/${l.service ?? ''}`;
    const ops = out.get(svc) ?? new Map<string, Map<string, ProtocolFigures>>();
    out.set(svc, ops);
    const protos = ops.get(l.operation ?? '') ?? new Map<string, ProtocolFigures>();
    ops.set(l.operation ?? '', protos);
    let f = protos.get(l.protocol ?? '');
    if (f === undefined) {
      f = { calls: 0, p50: NaN, p99: NaN, errorRatio: 0, bytesPerCall: NaN };
      protos.set(l.protocol ?? '', f);
    }
    return f;
  };
  const errors = new Map<ProtocolFigures, number>();
  for (const s of calls) {
    const f = cell(s.labels);
    f.calls += s.value;
    if (s.labels.code !== 'OK') errors.set(f, (errors.get(f) ?? 0) + s.value);
  }
  for (const s of p50) cell(s.labels).p50 = s.value;
  for (const s of p99) cell(s.labels).p99 = s.value;
  const bytesBy = new Map<ProtocolFigures, number>();
  for (const s of respBytes) bytesBy.set(cell(s.labels), s.value);
  for (const ops of out.values())
    for (const protos of ops.values())
      for (const f of protos.values()) {
        f.errorRatio = f.calls > 0 ? (errors.get(f) ?? 0) / f.calls : 0;
        f.bytesPerCall = f.calls > 0 && bytesBy.has(f) ? bytesBy.get(f)! / f.calls : NaN;
      }
  return out;
}

/** The latency buckets of each --metrics-detail level (docs/metrics.md, "Detail levels and cost"). */
const LATENCY_BUCKETS = {
  basic: [0.01, 0.1, 0.5, 2.5],
  standard: [0.005, 0.025, 0.05, 0.1, 0.25, 1, 2.5],
  full: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
} as const;

/**
 * Two quantiles read from the same bucket differ only by where PromQL's linear
 * interpolation put them, which moves with the share of calls in the bucket:
 * not a measured change, so never a finding.
 */
function sameBucket(a: number, b: number, buckets: readonly number[]): boolean {
  const index = (v: number): number => {
    const i = buckets.findIndex((le) => v <= le);
    return i < 0 ? buckets.length : i;
  };
  return index(a) === index(b);
}

/** The changes of `now` against `ref` that pass their thresholds, worst first. */
function worse(now: ProtocolFigures, ref: ProtocolFigures, buckets: readonly number[], bytesComparable = true): Change[] {
  const out: Change[] = [];
  for (const [metric, q] of [['p50', 0.5], ['p99', 0.99]] as const) {
    if (Math.min(now.calls, ref.calls) * (1 - q) < TAIL_CALLS) continue;
    const [v, r] = [now[metric], ref[metric]];
    if (!Number.isFinite(v) || !Number.isFinite(r) || r <= 0 || sameBucket(v, r, buckets)) continue;
    const rel = (v - r) / r;
    if (rel >= LATENCY.relative && v - r >= LATENCY.absolute) {
      out.push({ metric, reference: r, value: v, text: `${metric} ${ms(v)} vs ${ms(r)} (${change(rel)})`, severity: rel >= LATENCY.criticalRelative && v - r >= LATENCY.criticalAbsolute ? 'critical' : 'warning', score: rel / LATENCY.relative });
    }
  }
  const dErr = now.errorRatio - ref.errorRatio;
  if (dErr >= ERRORS.points && now.errorRatio >= ERRORS.factor * ref.errorRatio) {
    out.push({ metric: 'errors', reference: ref.errorRatio, value: now.errorRatio, text: `errors ${pct(now.errorRatio)} vs ${pct(ref.errorRatio)} (+${(dErr * 100).toFixed(1)} pp)`, severity: dErr >= ERRORS.criticalPoints ? 'critical' : 'warning', score: dErr / ERRORS.points });
  }
  if (bytesComparable && Number.isFinite(now.bytesPerCall) && Number.isFinite(ref.bytesPerCall) && ref.bytesPerCall > 0 && now.bytesPerCall >= BYTES.factor * ref.bytesPerCall && now.bytesPerCall - ref.bytesPerCall >= BYTES.absolute) {
    out.push({ metric: 'bytes_per_call', reference: ref.bytesPerCall, value: now.bytesPerCall, text: `response ${bytes(now.bytesPerCall)} per call vs ${bytes(ref.bytesPerCall)} (${change(now.bytesPerCall / ref.bytesPerCall - 1)})`, severity: 'warning', score: now.bytesPerCall / ref.bytesPerCall / BYTES.factor });
  }
  return out.sort((a, b) => Number(b.severity === 'critical') - Number(a.severity === 'critical') || b.score - a.score);
}

const figuresJson = (f: ProtocolFigures): Record<string, number | null> => ({
  calls: Math.round(f.calls),
  p50_seconds: Number.isFinite(f.p50) ? f.p50 : null,
  p99_seconds: Number.isFinite(f.p99) ? f.p99 : null,
  error_ratio: f.errorRatio,
  response_bytes_per_call: Number.isFinite(f.bytesPerCall) ? f.bytesPerCall : null,
});
const line = (label: string, f: ProtocolFigures): string => `${label}: ${count(f.calls)} calls, p50 ${ms(f.p50)}, p99 ${ms(f.p99)}, errors ${pct(f.errorRatio)}, response ${bytes(f.bytesPerCall)} per call`;

/** The protocol with the most calls of an operation, if it has enough of them. */
function dominant(protos: Map<string, ProtocolFigures> | undefined, minCalls: number): [string, ProtocolFigures] | undefined {
  const best = [...(protos ?? [])].sort((a, b) => b[1].calls - a[1].calls)[0];
  return best !== undefined && best[1].calls >= minCalls ? best : undefined;
}

export async function protocolRegressions(ctx: DiagnoseContext): Promise<Finding[]> {
  const { since, before, minCalls, baseline, metricsDetail } = ctx.settings;
  const buckets = LATENCY_BUCKETS[metricsDetail];
  const after = await table(ctx, since);
  const earlier = before === undefined ? undefined : await table(ctx, before);
  const findings: Finding[] = [];
  const qAfter = queries(ctx, since);
  const qBefore = before === undefined ? undefined : queries(ctx, before);
  for (const [svc, ops] of after) {
    const [namespace, service] = svc.split('/') as [string, string];
    for (const [operation, protos] of ops) {
      const base = protos.get(baseline);
      for (const [protocol, f] of protos) {
        if (protocol === baseline || f.calls < minCalls || base === undefined || base.calls < minCalls) continue;
        // A tRPC batch's body is shared out evenly between its procedures (docs/metrics.md): its bytes per call are not one call's.
        const changes = worse(f, base, buckets, protocol !== 'trpc' && baseline !== 'trpc');
        if (changes.length === 0) continue;
        findings.push({
          kind: 'protocol_regression',
          severity: changes.some((c) => c.severity === 'critical') ? 'critical' : 'warning',
          namespace,
          service,
          title: `${operation} over ${protocol} is worse than over ${baseline} at ${svc}: ${changes.map((c) => c.text).join(', ')}`,
          saw: [line(`${operation} over ${protocol}`, f), line(`${operation} over ${baseline} (baseline)`, base)],
          figures: { operation, protocol, baseline, window: since.text, figures: figuresJson(f), baseline_figures: figuresJson(base), changes: changes.map(({ metric, reference, value }) => ({ metric, reference, value })) },
          why: `Callers of ${operation} over ${protocol} get a worse service than over ${baseline} from the same pods: the difference is in the protocol's path (its route, its transcoding, its encoding or its client), not in the app's work.`,
          remedy: [`hold the move to ${protocol} for ${operation} (--split ${operation}=0 where it is rehearsed) until its path is fixed; compare its route, operation mapping and payload on the Protocol migration dashboard`],
          runbook: RUNBOOKS.protocols,
          series: ['rpcscope_calls_total', 'rpcscope_call_duration_seconds', 'rpcscope_call_bytes_total'],
          queries: Object.values(qAfter),
          score: Math.max(...changes.map((c) => c.score)),
        });
      }
      if (earlier === undefined || before === undefined || qBefore === undefined) continue;
      const now = dominant(protos, minCalls);
      const then = dominant(earlier.get(svc)?.get(operation), minCalls);
      if (now === undefined || then === undefined) continue;
      const changes = worse(now[1], then[1], buckets, now[0] !== 'trpc' && then[0] !== 'trpc');
      if (changes.length === 0) continue;
      const moved = now[0] !== then[0];
      findings.push({
        kind: 'migration_regression',
        severity: changes.some((c) => c.severity === 'critical') ? 'critical' : 'warning',
        namespace,
        service,
        title: `${operation} at ${svc} got worse${moved ? ` after moving from ${then[0]} to ${now[0]}` : ` over ${now[0]}`}: ${changes.map((c) => c.text).join(', ')}`,
        saw: [line(`now (${since.text}), mostly ${now[0]}`, now[1]), line(`before (${before.text}), mostly ${then[0]}`, then[1])],
        figures: { operation, protocol_after: now[0], protocol_before: then[0], after: figuresJson(now[1]), before: figuresJson(then[1]), changes: changes.map(({ metric, reference, value }) => ({ metric, reference, value })) },
        why: moved ? `The operation's callers moved from ${then[0]} to ${now[0]} between the two windows, and it is worse for them now: the new protocol's path costs what the old one did not.` : `The operation's callers use ${now[0]} in both windows, and it is worse now: a change in the app, its dependencies or the load.`,
        remedy: moved ? [`move ${operation}'s callers back to ${then[0]} (or --split ${operation}=0 where it is rehearsed) while the ${now[0]} path is examined on the Protocol migration dashboard, before and after`] : ['look for the change between the two windows: a deployment, a dependency, a change in load (RPC overview, by pod and code)'],
        runbook: RUNBOOKS.protocols,
        series: ['rpcscope_calls_total', 'rpcscope_call_duration_seconds', 'rpcscope_call_bytes_total'],
        queries: [...Object.values(qAfter), ...Object.values(qBefore)],
        score: Math.max(...changes.map((c) => c.score)),
      });
    }
  }
  return findings;
}
