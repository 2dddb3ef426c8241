// One upstream endpoint (`ip:port`) as the balancer sees it: calls in flight,
// a latency estimate, and whether it may be picked now.
import { performance } from 'node:perf_hooks';
import type { UpstreamUrl } from '../../config/parse-value.ts';
import type { EjectionReason } from '../../call/faults.ts';
import type { UpstreamPick } from '../../call/call.ts';

/** A failed endpoint sits out for 1 s, doubling per failure in a row, at most 30 s. */
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** Peak-EWMA decay (Linkerd's default): older latencies fade over ~10 s. */
const EWMA_DECAY_MS = 10_000;
/**
 * Where every estimate starts (Linkerd's default RTT): early fast calls then move
 * it only slowly, so a cold first call (JIT, a new connection) does not rank an
 * endpoint; only a call slower than this counts as a peak from the start.
 */
const DEFAULT_RTT_MS = 30;

export class Endpoint {
  /** Calls in flight. */
  active = 0;
  /** Calls picked onto it so far. */
  calls = 0;
  /** Peak-EWMA of upstream latency in ms. */
  ewmaMs = DEFAULT_RTT_MS;
  private ewmaAt: number;
  private failures = 0;
  /** Not before this time (ms, performance.now()) after a failure. */
  retryAt = 0;
  /** Gone from discovery: no new calls; closed once its calls are done. */
  draining = false;
  /** Why it was last taken out of rotation, until a call on it succeeds (outlier-ejection.ts). */
  ejectedFor: EjectionReason | undefined;
  /** Its back-off is over and a connection is being tried before calls go to it again. */
  probing = false;
  /** Calls in a row it answered UNAVAILABLE (or 502, 503, 504). */
  consecutiveUnavailable = 0;
  /** What a call picked onto it is given (its target, and how the balancer hears of the call's end): made once, by the balancer that keeps it. */
  pick: UpstreamPick | undefined;

  constructor(
    /** `host:port`, the `upstream` label. */
    readonly address: string,
    readonly target: UpstreamUrl,
    /** When it was discovered (performance.now()); the default estimate dates from then. */
    createdAt: number = performance.now(),
  ) {
    this.ewmaAt = createdAt;
  }

  /**
   * Peak-EWMA cost: the latency estimate decayed to `now`, times the load (calls in
   * flight + 1). Decaying on read, as Finagle's PeakEwma does, lets an endpoint
   * that one slow call put out of favour be tried again once it has sat idle.
   */
  cost(now: number): number {
    return this.ewmaMs * Math.exp(-Math.max(0, now - this.ewmaAt) / EWMA_DECAY_MS) * (this.active + 1);
  }

  usable(now: number): boolean {
    return !this.draining && !this.probing && now >= this.retryAt;
  }

  /** Out of rotation now: backing off, or being probed. */
  ejected(now: number): boolean {
    return this.probing || now < this.retryAt;
  }

  /** Failures in a row (each back-off twice the last). */
  get failuresInARow(): number {
    return this.failures;
  }

  /** Takes it out of rotation for a back-off that doubles with each failure in a row. */
  backOff(now: number): void {
    this.failures++;
    this.retryAt = now + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (this.failures - 1));
  }

  /** A call picked onto it was answered without reaching it (its queue was full): busy is not down, and says nothing of its latency. */
  passed(): void {
    this.active--;
  }

  /** A call on it ended; `latencyMs` is undefined when the endpoint could not be reached. */
  finished(now: number, latencyMs: number | undefined): void {
    this.active--;
    if (latencyMs === undefined) return this.backOff(now);
    this.failures = 0;
    this.retryAt = 0;
    this.ejectedFor = undefined;
    this.consecutiveUnavailable = 0;
    // Peak EWMA: a slower call raises the estimate at once, faster ones lower it gradually.
    if (latencyMs > this.ewmaMs) {
      this.ewmaMs = latencyMs;
    } else {
      const w = Math.exp(-(now - this.ewmaAt) / EWMA_DECAY_MS);
      this.ewmaMs = this.ewmaMs * w + latencyMs * (1 - w);
    }
    this.ewmaAt = now;
  }
}
