// How a call is given an endpoint. Each picker is one mechanism; the result is a
// tagged union so that "no endpoint" is an answer, not an exception.
import type { Endpoint } from './endpoint.ts';

export type Pick = { kind: 'endpoint'; endpoint: Endpoint } | { kind: 'none'; reason: string };

export interface Picker {
  /** `usable` is non-empty; `connectionId` is the downstream connection carrying the call. */
  pick(usable: readonly Endpoint[], connectionId: number): Endpoint;
  /** The downstream connection closed (sticky pins end with it). */
  connectionClosed?(connectionId: number): void;
}


/** Two distinct endpoints drawn at random ("power of two choices"). */
export function twoChoices(usable: readonly Endpoint[], random: () => number): [Endpoint, Endpoint] {
  const n = usable.length;
  const i = Math.floor(random() * n);
  const j = n === 1 ? i : (i + 1 + Math.floor(random() * (n - 1))) % n;
  return [usable[i]!, usable[j]!];
}
