// Failed connections to an upstream, logged at warn: the first thing an operator
// looks for when calls come back UNAVAILABLE. An upstream that is down fails
// every call, so the log is rate-limited per endpoint: one line per WINDOW_MS,
// carrying how many failures the previous window held back.
import type { Logger } from '../log.ts';

const WINDOW_MS = 10_000;
/** Endpoints remembered before the ones whose window has passed are forgotten. */
const MAX_ENDPOINTS = 1024;

interface EndpointWindow {
  loggedAt: number;
  suppressed: number;
}

export class ConnectFailureLog {
  private readonly windows = new Map<string, EndpointWindow>();

  constructor(private readonly log: Logger, private readonly clock: () => number = Date.now) {}

  report(endpoint: string, err: Error & { code?: string }): void {
    const t = this.clock();
    const w = this.windows.get(endpoint);
    if (w !== undefined && t - w.loggedAt < WINDOW_MS) {
      w.suppressed++;
      return;
    }
    this.log.warn('cannot connect to upstream', {
      upstream: endpoint,
      error: err.message,
      ...(err.code ? { code: err.code } : {}),
      ...(w?.suppressed ? { suppressed: w.suppressed, suppressedSeconds: Math.round((t - w.loggedAt) / 1000) } : {}),
    });
    if (w === undefined && this.windows.size >= MAX_ENDPOINTS) this.forgetPassed(t);
    this.windows.set(endpoint, { loggedAt: t, suppressed: 0 });
  }

  private forgetPassed(t: number): void {
    for (const [endpoint, w] of this.windows) if (t - w.loggedAt >= WINDOW_MS) this.windows.delete(endpoint);
  }
}
