// Shadow mismatches (--shadow): operations whose mirrored calls the next
// version answers differently, or not at all; with the split shares
// (--split) where a rehearsal runs beside it, since both are how a migration
// is tried before it is made.
import { serviceKey, type DiagnoseContext } from './diagnose-context.ts';
import { RUNBOOKS, type Finding } from './diagnose-finding.ts';
import { count, pct } from './format.ts';

/** Mismatches or errors past 1 % of an operation's mirrored calls. */
const SHARE = 0.01;
const MIN = 5;

export async function shadowMismatches(ctx: DiagnoseContext): Promise<Finding[]> {
  const shadowQuery = ctx.increase('rpcscope_shadow_calls_total', '', 'namespace, service, operation, result');
  const splitQuery = ctx.increase('rpcscope_translated_calls_total', 'translation="rest_to_grpc"', 'namespace, service, operation');
  const [shadow, split] = await Promise.all([ctx.query(shadowQuery), ctx.query(splitQuery)]);
  const ops = new Map<string, Record<string, number>>();
  for (const s of shadow) {
    const k = `${serviceKey(s.labels)}\u0000${s.labels.operation ?? ''}`;
    const r = ops.get(k) ?? {};
    r[s.labels.result ?? ''] = (r[s.labels.result ?? ''] ?? 0) + s.value;
    ops.set(k, r);
  }
  const splitBy = new Map(split.map((s) => [`${serviceKey(s.labels)}\u0000${s.labels.operation ?? ''}`, s.value]));
  const findings: Finding[] = [];
  for (const [k, r] of ops) {
    const [svc, operation] = k.split('\u0000') as [string, string];
    const total = (r.match ?? 0) + (r.mismatch ?? 0) + (r.error ?? 0);
    const bad = (r.mismatch ?? 0) + (r.error ?? 0);
    if (total <= 0 || bad < MIN || bad / total < SHARE) continue;
    const [namespace, service] = svc.split('/') as [string, string];
    const transcoded = splitBy.get(k);
    findings.push({
      kind: 'shadow_mismatch',
      severity: 'warning',
      namespace,
      service,
      title: `the shadow answers ${pct((r.mismatch ?? 0) / total)} of ${operation}'s mirrored calls differently at ${svc}${(r.error ?? 0) > 0 ? `, and fails ${pct((r.error ?? 0) / total)}` : ''}`,
      saw: [
        `${operation}: ${count(total)} calls mirrored: ${count(r.match ?? 0)} match, ${count(r.mismatch ?? 0)} mismatch, ${count(r.error ?? 0)} error`,
        ...(transcoded === undefined ? [] : [`${count(transcoded)} of its REST calls were transcoded to gRPC by --split in the same window`]),
      ],
      figures: { operation, mirrored: Math.round(total), match: Math.round(r.match ?? 0), mismatch: Math.round(r.mismatch ?? 0), error: Math.round(r.error ?? 0), split_transcoded: transcoded === undefined ? null : Math.round(transcoded) },
      why: 'The next version answers the same requests differently from the version in service: moving callers to it would change what they get. The sidecar\'s "shadow answer differs" log line names the first differing field.',
      remedy: [`read the sidecars' "shadow answer differs" log lines for ${operation} (at most one per 10 s), fix the new version or accept the difference, and keep --shadow on until the mismatches stop`],
      runbook: RUNBOOKS.protocols,
      series: ['rpcscope_shadow_calls_total', ...(transcoded === undefined ? [] : ['rpcscope_translated_calls_total'])],
      queries: [shadowQuery, ...(transcoded === undefined ? [] : [splitQuery])],
      score: bad / total / SHARE,
    });
  }
  return findings;
}
