// The client's own count of its calls, which every scenario holds the sidecars' metrics to.
import type { CallTally } from './agent-protocol.ts';

export function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}

export const perCode = (tally: readonly CallTally[]): Record<string, number> => countBy(tally, (t) => t.code);
/** Calls answered per pod (`x-pod`), failed calls (no pod) left out. */
export const perPod = (tally: readonly CallTally[]): Record<string, number> => countBy(tally.filter((t) => t.pod !== ''), (t) => t.pod);
/** The longest a call took, ms. */
export const longest = (tally: readonly CallTally[]): number => Math.max(0, ...tally.map((t) => t.end - t.start));

/** max / mean over `names` (a pod with no calls counts as 0): 1 even, N when one of N takes all. */
export function skew(counts: Record<string, number>, names: readonly string[]): number {
  const values = names.map((n) => counts[n] ?? 0);
  const total = values.reduce((a, b) => a + b, 0);
  return total === 0 ? 0 : Math.max(...values) / (total / values.length);
}

/** The calls that did not end `ok`, each with when it ran (ms after the first call began) and why, for an assertion's message. */
export function failures(tally: readonly CallTally[], ok = 'OK'): string {
  const t0 = Math.min(...tally.map((t) => t.start));
  const failed = tally.filter((t) => t.code !== ok);
  return failed.length === 0 ? 'none' : failed.map((t) => describeCall(t, t0)).join('\n');
}

/** One call for an assertion's message: its number, code, when it ran (ms after `since`) and why. */
function describeCall(t: CallTally, since: number): string {
  return `#${t.n} ${t.code} at ${t.start - since}-${t.end - since} ms: ${t.detail ?? ''}`;
}

/** The `n` longest calls, each with its code, pod and times (ms after `since`, an epoch time such as a fault's), for an assertion's message. */
export function slowest(tally: readonly CallTally[], since: number, n = 3): string {
  const byLength = [...tally].sort((a, b) => b.end - b.start - (a.end - a.start)).slice(0, n);
  return byLength.map((t) => `${describeCall(t, since)} (${t.end - t.start} ms, on ${t.pod || 'no pod'})`).join('; ');
}
