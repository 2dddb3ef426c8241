import type { Endpoint } from './endpoint.ts';
import { twoChoices, type Picker } from './picker.ts';

/**
 * Peak-EWMA (Linkerd's balancer): of two endpoints at random, the one whose
 * latency estimate times its load (calls in flight + 1) is lower. An endpoint not
 * yet measured costs 0 and is tried first.
 */
export class EwmaPicker implements Picker {
  constructor(private readonly random: () => number = Math.random) {}

  pick(usable: readonly Endpoint[]): Endpoint {
    const [a, b] = twoChoices(usable, this.random);
    const cost = (e: Endpoint): number => e.ewmaMs * (e.active + 1);
    const ca = cost(a);
    const cb = cost(b);
    if (ca !== cb) return ca < cb ? a : b;
    return a.active <= b.active ? a : b;
  }
}
