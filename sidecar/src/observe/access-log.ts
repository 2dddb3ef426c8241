// The access log: one JSON line per call (or per sampled call), with the labels
// the call got in the metrics plus what a metric cannot hold — its duration,
// bytes, upstream endpoint, reset and deadline.
//
// Decided once: off (or a sample rate of 0) is the no-op observer. Lines are
// gathered in memory and written in one chunk every FLUSH_MS or FLUSH_BYTES, so
// a call pays a JSON.stringify and a string append, never a write(2). When the
// destination cannot keep up, lines are dropped rather than buffered without
// bound, and the drop is counted and reported once the writes catch up.
import { createWriteStream } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import type { Logger } from '../log.ts';
import { http2ErrorName } from '../protocol/reset-codes.ts';
import { grpcCodeName } from '../protocol/status-codes.ts';
import type { Route } from '../route/router.ts';
import { decideCodeNumber, endingReset } from '../call/call-outcome.ts';
import type { CallRecord } from '../call/call-record.ts';
import { noopObserver, type Observer } from '../call/observer.ts';

const FLUSH_MS = 200;
const FLUSH_BYTES = 64 * 1024;
/** Bytes waiting in the destination stream past which new lines are dropped. */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

export interface AccessLogOptions {
  /** `off`, `stdout`, `stderr` or a file path (appended to). */
  destination: string;
  /** The share of calls written, 0 to 1. */
  sample: number;
  /** The metrics' route of a call: its `method` and `operation` labels. */
  route: (call: CallRecord) => Route;
  log: Logger;
  /** Where `stdout` and `stderr` write; the process's own by default. */
  stdout?: Writable;
  stderr?: Writable;
}

export interface AccessLog {
  observer: Observer;
  /** Writes what is gathered and closes a file destination. */
  close(): Promise<void>;
}

/** One call as a line. Field names follow the metrics' labels; times are wall-clock ISO 8601 and milliseconds. */
export function accessLogLine(call: CallRecord, route: Route, sampleRate: number): string {
  const reset = endingReset(call);
  return JSON.stringify({
    start_time: new Date(performance.timeOrigin + call.startTime).toISOString(),
    direction: call.direction,
    protocol: call.protocol,
    encoding: call.encoding,
    method: route.method,
    operation: route.operation,
    code: grpcCodeName(decideCodeNumber(call)),
    http_status: call.httpStatus === 0 ? '' : String(call.httpStatus),
    duration_ms: Math.round((call.endTime - call.startTime) * 1000) / 1000,
    request_bytes: call.requestBytes,
    response_bytes: call.responseBytes,
    upstream: call.upstream,
    reset_side: reset?.side ?? '',
    reset_code: reset === undefined ? '' : http2ErrorName(reset.code),
    deadline_ms: call.deadline?.ms ?? null,
    sample_rate: sampleRate,
  }) + '\n';
}

export function createAccessLog(opts: AccessLogOptions): AccessLog {
  if (opts.destination === 'off' || opts.sample === 0) return { observer: noopObserver, close: async () => {} };
  const ownStream = opts.destination !== 'stdout' && opts.destination !== 'stderr';
  const out: Writable = opts.destination === 'stdout' ? (opts.stdout ?? process.stdout) : opts.destination === 'stderr' ? (opts.stderr ?? process.stderr) : createWriteStream(opts.destination, { flags: 'a' });
  out.on('error', (err) => opts.log.warn('access log cannot be written', { destination: opts.destination, error: err.message }));
  let pending = '';
  let dropped = 0;
  const timer = setInterval(() => flush(), FLUSH_MS).unref();

  const flush = (): void => {
    if (pending === '') return;
    out.write(pending);
    pending = '';
    if (dropped > 0 && out.writableLength < MAX_PENDING_BYTES / 2) {
      opts.log.warn('access log fell behind: lines were dropped', { destination: opts.destination, dropped });
      dropped = 0;
    }
  };

  const write = (call: CallRecord): void => {
    if (out.writableLength > MAX_PENDING_BYTES) {
      dropped++;
      return;
    }
    pending += accessLogLine(call, opts.route(call), opts.sample);
    if (pending.length >= FLUSH_BYTES) flush();
  };
  const { sample } = opts;
  const callEnded = sample >= 1 ? write : (call: CallRecord): void => {
    if (Math.random() < sample) write(call);
  };

  return {
    observer: { ...noopObserver, callEnded },
    close: async () => {
      clearInterval(timer);
      flush();
      if (ownStream) await new Promise<void>((resolve) => out.end(resolve));
    },
  };
}
