import type { Endpoint } from './endpoint.ts';
import { twoChoices, type Picker } from './picker.ts';

/**
 * Power of two choices on calls in flight (Envoy's LEAST_REQUEST): two endpoints
 * at random, the one with fewer calls in flight wins. Slow endpoints collect
 * calls in flight and so get fewer new ones.
 */
export class LeastRequestPicker implements Picker {
  constructor(private readonly random: () => number = Math.random) {}

  pick(usable: readonly Endpoint[]): Endpoint {
    const [a, b] = twoChoices(usable, this.random);
    if (a.active !== b.active) return a.active < b.active ? a : b;
    return a.calls <= b.calls ? a : b;
  }
}
