// What the migration's rehearsal showed, from the pods' sidecars: how many REST
// calls of the split operation reached gRPC through the transcoder
// (rpcscope_translated_calls_total against rpcscope_calls_total), what
// translating cost (rpcscope_translation_seconds), and how the next version
// answered the calls mirrored to it (rpcscope_shadow_calls_total by result,
// and the first differing field from the `shadow answer differs` log).
import type { MetricsHistory } from './metrics-history.ts';
import { shadowDifferences, type ShadowDifference } from './shadow-log.ts';
import { INBOUND, shortOperation } from './story-figures.ts';

export interface MigrationFigures {
  split: {
    /** `pkg.Service/Method`. */
    operation: string;
    percent: number;
    /** The operation's REST calls the pods' sidecars counted. */
    restCalls: number;
    /** Of those, the ones transcoded to gRPC. */
    transcoded: number;
    /** Mean time spent translating one call, seconds (NaN before any). */
    translationMeanS: number;
  };
  shadow: {
    /** Short operation name -> mirrored calls by result. */
    byOperation: Record<string, { match: number; mismatch: number; error: number }>;
    match: number;
    mismatch: number;
    error: number;
    /** Short operation name -> the latest logged difference. */
    differences: Record<string, ShadowDifference>;
  };
}

export function migrationFigures(h: MetricsHistory, pods: readonly string[], split: { operation: string; percent: number }, logs: readonly string[], fromMs: number, toMs: number): MigrationFigures {
  const onPods = { target: (t: string) => pods.includes(t) };
  const restCalls = h.total('rpcscope_calls_total', { ...INBOUND, ...onPods, protocol: 'rest', operation: split.operation }, fromMs, toMs);
  const transcoded = h.total('rpcscope_translated_calls_total', { ...onPods, translation: 'rest_to_grpc', operation: split.operation }, fromMs, toMs);
  const seconds = h.total('rpcscope_translation_seconds_sum', { ...onPods, translation: 'rest_to_grpc' }, fromMs, toMs);
  const translations = h.total('rpcscope_translation_seconds_count', { ...onPods, translation: 'rest_to_grpc' }, fromMs, toMs);
  const byOperation: MigrationFigures['shadow']['byOperation'] = {};
  const totals = { match: 0, mismatch: 0, error: 0 };
  for (const [key, n] of Object.entries(h.increase('rpcscope_shadow_calls_total', onPods, fromMs, toMs, ['operation', 'result']))) {
    const [operation = '', result = ''] = key.split(' | ');
    if (result !== 'match' && result !== 'mismatch' && result !== 'error') continue;
    const row = (byOperation[shortOperation(operation)] ??= { match: 0, mismatch: 0, error: 0 });
    row[result] += n;
    totals[result] += n;
  }
  const differences = Object.fromEntries(Object.entries(shadowDifferences(logs)).map(([op, d]) => [shortOperation(op), d]));
  return {
    split: { operation: split.operation, percent: split.percent, restCalls, transcoded, translationMeanS: translations > 0 ? seconds / translations : NaN },
    shadow: { byOperation, ...totals, differences },
  };
}

const share = (part: number, whole: number): string => (whole > 0 ? `${Math.round((part / whole) * 100)} %` : '–');
const micros = (s: number): string => (Number.isFinite(s) ? `${Math.round(s * 1e6)} µs` : '–');

/** The figures as a few lines, the same on the terminal, the page and in the summary. */
export function renderMigration(m: MigrationFigures): string[] {
  const s = m.split;
  const op = shortOperation(s.operation);
  const out = [
    `split (--split ${s.operation}=${s.percent}): ${Math.round(s.transcoded)} of ${Math.round(s.restCalls)} REST ${op} calls (${share(s.transcoded, s.restCalls)}) reached the pods' gRPC through the transcoder, the rest their REST routes; translating took ${micros(s.translationMeanS)} a call`,
  ];
  const ops = Object.entries(m.shadow.byOperation)
    .sort((a, b) => b[1].match + b[1].mismatch - (a[1].match + a[1].mismatch))
    .map(([name, r]) => `${name} ${Math.round(r.match)} match${r.mismatch > 0 ? `, ${Math.round(r.mismatch)} mismatch` : ''}${r.error > 0 ? `, ${Math.round(r.error)} error` : ''}`);
  out.push(`shadow (--shadow to v2): ${Math.round(m.shadow.match)} match, ${Math.round(m.shadow.mismatch)} mismatch, ${Math.round(m.shadow.error)} error${ops.length ? ` (${ops.join('; ')})` : ''}`);
  for (const [name, d] of Object.entries(m.shadow.differences)) {
    const others = d.fields.filter((f) => f !== d.field);
    out.push(`  v2 differs in ${name}: ${d.field} ${d.primary} -> ${d.shadow}, as the sidecars' "shadow answer differs" log says${others.length ? ` (it also named ${others.slice(0, 3).join(', ')})` : ''}`);
  }
  return out;
}
