import { performance } from 'node:perf_hooks';
import type { Endpoint } from './endpoint.ts';
import { twoChoices, type Picker } from './picker.ts';

/**
 * Costs within this fraction of each other are noise, not a difference: between
 * equally fast endpoints, latency jitter alone would otherwise steer calls.
 */
const EQUAL_COST = 0.25;

/**
 * Peak-EWMA (Linkerd's balancer): of two endpoints at random, the one whose
 * decayed latency estimate times its load (calls in flight + 1) is lower.
 * Near-equal costs fall back to fewer calls in flight, then fewer calls.
 */
export class EwmaPicker implements Picker {
  constructor(
    private readonly random: () => number = Math.random,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  pick(usable: readonly Endpoint[]): Endpoint {
    const [a, b] = twoChoices(usable, this.random);
    const now = this.clock();
    const ca = a.cost(now);
    const cb = b.cost(now);
    if (Math.abs(ca - cb) > EQUAL_COST * Math.max(ca, cb)) return ca < cb ? a : b;
    if (a.active !== b.active) return a.active < b.active ? a : b;
    return a.calls <= b.calls ? a : b;
  }
}
