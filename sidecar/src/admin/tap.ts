// /debug/tap: the calls passing through this sidecar now, one JSON line each
// (NDJSON, or server-sent events for a caller that accepts text/event-stream),
// as `linkerd viz tap` and Envoy's tap filter show them. Fed by the call records
// both data planes hand the observer seam when a call ends.
//
// Bounded on every side:
// - nobody watching costs a call one boolean test (callEnded returns at once);
// - at most MAX_WATCHERS watchers at once, the next one is answered 503;
// - each watcher gets at most its `max_rate` lines a second (default
//   DEFAULT_RATE, at most MAX_RATE); calls over it are counted, not sent;
// - a watcher that reads slower than the calls come is never buffered for:
//   past MAX_BUFFERED bytes waiting in its response, lines are dropped and
//   counted; the counts reach the watcher once a second as a `skipped` line.
// Only the call's labels and figures leave the sidecar: no header value and no
// body byte is ever read into a line.
import type http from 'node:http';
import type { CallRecord } from '../call/call-record.ts';
import { noopObserver, type Observer } from '../call/observer.ts';
import { tapCall, type TapCall } from './tap-line.ts';

export const MAX_WATCHERS = 8;
export const DEFAULT_RATE = 100;
export const MAX_RATE = 1000;
/** Bytes waiting in one watcher's response past which its lines are dropped. */
export const MAX_BUFFERED = 64 * 1024;

/** What a watcher asks to see; every field optional. Matched against the call's labels. */
export interface TapFilter {
  method?: string;
  protocol?: string;
  code?: string;
  direction?: string;
  minDurationMs?: number;
}

interface Watcher {
  filter: TapFilter;
  write(line: string): void;
  res: http.ServerResponse;
  rate: number;
  tokens: number;
  refilledAt: number;
  rateLimited: number;
  slowReader: number;
}

export interface Tap {
  observer: Observer;
  handler: http.RequestListener;
  /** Watchers attached now. */
  watchers(): number;
}

function matches(f: TapFilter, line: TapCall, durationMs: number): boolean {
  return (
    (f.method === undefined || f.method === line.method || f.method === line.operation) &&
    (f.protocol === undefined || f.protocol === line.protocol) &&
    (f.code === undefined || f.code === line.code) &&
    (f.direction === undefined || f.direction === line.direction) &&
    (f.minDurationMs === undefined || durationMs >= f.minDurationMs)
  );
}

/** The filter and rate of `?method=&protocol=&code=&direction=&min_duration_ms=&max_rate=`, or the first bad parameter. */
export function parseTapQuery(search: URLSearchParams): { filter: TapFilter; rate: number } | { error: string } {
  const filter: TapFilter = {};
  for (const key of ['method', 'protocol', 'code', 'direction'] as const) {
    const v = search.get(key);
    if (v !== null && v !== '') filter[key] = v;
  }
  const minText = search.get('min_duration_ms');
  if (minText !== null) {
    const n = Number(minText);
    if (!(n >= 0)) return { error: `min_duration_ms: ${JSON.stringify(minText)} is not a number of milliseconds` };
    filter.minDurationMs = n;
  }
  const rateText = search.get('max_rate');
  const rate = rateText === null ? DEFAULT_RATE : Number(rateText);
  if (!(rate > 0 && rate <= MAX_RATE)) return { error: `max_rate: ${JSON.stringify(rateText)}: give lines per second from 1 to ${MAX_RATE}` };
  return { filter, rate };
}

export function createTap(): Tap {
  const watchers = new Set<Watcher>();
  /** Downstream connections' peers, for the `peer` field: kept per connection, never per call. */
  const peers = new Map<number, string>();

  const deliver = (w: Watcher, line: TapCall, durationMs: number, now: number): void => {
    if (!matches(w.filter, line, durationMs)) return;
    w.tokens = Math.min(w.rate, w.tokens + ((now - w.refilledAt) / 1000) * w.rate);
    w.refilledAt = now;
    if (w.tokens < 1) {
      w.rateLimited++;
      return;
    }
    if (w.res.writableLength > MAX_BUFFERED) {
      w.slowReader++;
      return;
    }
    w.tokens -= 1;
    w.write(JSON.stringify(line));
  };

  const callEnded = (call: CallRecord): void => {
    if (watchers.size === 0) return;
    const line = tapCall(call, peers.get(call.connectionId) ?? '');
    const now = performance.now();
    const durationMs = call.endTime - call.startTime;
    for (const w of watchers) deliver(w, line, durationMs, now);
  };

  const handler: http.RequestListener = (req, res) => {
    const parsed = parseTapQuery(new URL(req.url ?? '/', 'http://admin').searchParams);
    if ('error' in parsed) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(`${parsed.error}\n`);
      return;
    }
    if (watchers.size >= MAX_WATCHERS) {
      res.writeHead(503, { 'content-type': 'text/plain', 'retry-after': '5' }).end(`${MAX_WATCHERS} watchers are attached already; try again when one leaves\n`);
      return;
    }
    const sse = (req.headers.accept ?? '').includes('text/event-stream');
    res.writeHead(200, { 'content-type': sse ? 'text/event-stream' : 'application/x-ndjson', 'cache-control': 'no-store' });
    res.flushHeaders();
    const write = sse ? (line: string): void => void res.write(`data: ${line}\n\n`) : (line: string): void => void res.write(`${line}\n`);
    const w: Watcher = { filter: parsed.filter, write, res, rate: parsed.rate, tokens: parsed.rate, refilledAt: performance.now(), rateLimited: 0, slowReader: 0 };
    // What was held back reaches the watcher once a second, when it can take it.
    const report = setInterval(() => {
      if ((w.rateLimited === 0 && w.slowReader === 0) || res.writableLength > MAX_BUFFERED) return;
      write(JSON.stringify({ kind: 'skipped', rate_limited: w.rateLimited, slow_reader: w.slowReader }));
      w.rateLimited = 0;
      w.slowReader = 0;
    }, 1000);
    report.unref();
    watchers.add(w);
    const leave = (): void => {
      clearInterval(report);
      watchers.delete(w);
    };
    res.once('close', leave);
    res.once('error', leave);
  };

  return {
    observer: {
      ...noopObserver,
      callEnded,
      connectionOpened: (c) => {
        if (c.side === 'downstream') peers.set(c.id, c.peer);
      },
      connectionClosed: (c) => {
        if (c.side === 'downstream') peers.delete(c.id);
      },
    },
    handler,
    watchers: () => watchers.size,
  };
}
