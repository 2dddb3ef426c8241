// The token bucket the per-connection budgets share (resets, PING, SETTINGS):
// `burst` frames at once, then `perSecond` more each second, on the clock given.

export interface BucketLimit {
  readonly burst: number;
  readonly perSecond: number;
}

export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(private readonly limit: BucketLimit, private readonly clock: () => number, now = clock()) {
    this.tokens = limit.burst;
    this.last = now;
  }

  /** Takes one token; false once the connection has spent more than its budget. */
  spend(): boolean {
    const t = this.clock();
    this.tokens = Math.min(this.limit.burst, this.tokens + ((t - this.last) / 1000) * this.limit.perSecond);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}
