// Client connections that hold a slot and do nothing useful with it: an
// HTTP/1.1 request whose headers trickle in (slowloris), and a connection with
// no call in flight for too long. One sweep over the open connections, a few
// times per timeout, as Node's own connectionsCheckingInterval does: the
// proxy's hot path pays nothing, and a deadline is met to within a quarter of it.
//
// Calls in flight are never timed out here: a gRPC stream or a long poll may
// last hours. What is watched is the time between calls (nginx
// client_header_timeout 60 s, keepalive_timeout; Envoy request_headers_timeout,
// idle_timeout 1 h).
import type { ConnectionRecord } from '../call/observer.ts';

export type Expiry = 'request_headers_timeout' | 'idle_timeout';

export interface Watched {
  conn: ConnectionRecord;
  /** HTTP/1.1 only: bytes read from the client so far, to tell a request begun from a connection at rest. */
  bytesRead?: () => number;
  /** Ends the connection; called at most once. */
  expire(why: Expiry): void;
}

interface State {
  w: Watched;
  calls: number;
  bytes: number;
  /** Since when no call was in flight. */
  quietSince: number;
  /** HTTP/1.1: since when the next request has been arriving without its headers complete. */
  headersSince: number | undefined;
}

const MIN_SWEEP_MS = 25;
const MAX_SWEEP_MS = 1000;

export class ConnectionTimeouts {
  private readonly watched = new Set<State>();
  private timer: NodeJS.Timeout | undefined;
  private readonly sweepMs: number;

  constructor(private readonly requestHeadersMs: number, private readonly idleMs: number, private readonly clock: () => number = Date.now) {
    const shortest = Math.min(...[requestHeadersMs, idleMs].filter((ms) => ms > 0));
    this.sweepMs = Math.max(MIN_SWEEP_MS, Math.min(MAX_SWEEP_MS, shortest / 4));
  }

  private get off(): boolean {
    return this.requestHeadersMs <= 0 && this.idleMs <= 0;
  }

  /**
   * Watches a connection until the returned function is called (on close). An
   * HTTP/1.1 connection is handed over with its first request begun: its
   * headers clock starts now.
   */
  watch(w: Watched): () => void {
    if (this.off) return () => {};
    const t = this.clock();
    const state: State = { w, calls: w.conn.calls, bytes: w.bytesRead?.() ?? 0, quietSince: t, headersSince: w.bytesRead ? t : undefined };
    this.watched.add(state);
    this.timer ??= setInterval(() => this.sweep(), this.sweepMs).unref();
    return () => {
      this.watched.delete(state);
      if (this.watched.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  sweep(): void {
    const t = this.clock();
    for (const s of this.watched) {
      const { conn, bytesRead } = s.w;
      if (conn.active > 0 || conn.calls !== s.calls) {
        s.calls = conn.calls;
        s.quietSince = t;
        s.headersSince = undefined;
        if (bytesRead) s.bytes = bytesRead();
        continue;
      }
      if (bytesRead) {
        const bytes = bytesRead();
        if (bytes !== s.bytes) {
          s.bytes = bytes;
          s.headersSince ??= t;
        }
      }
      let why: Expiry | undefined;
      if (s.headersSince !== undefined) {
        if (this.requestHeadersMs > 0 && t - s.headersSince >= this.requestHeadersMs) why = 'request_headers_timeout';
      } else if (this.idleMs > 0 && t - s.quietSince >= this.idleMs) why = 'idle_timeout';
      if (why) {
        this.watched.delete(s);
        s.w.expire(why);
      }
    }
  }
}
