// Faults the sidecar contains instead of dying of: an exception raised while
// handling one connection or one call is caught where that handling starts,
// counted here, logged, and the sidecar keeps serving every other client. Also
// the client connections the sidecar cut for misbehaving (a rapid-reset flood, a
// client too slow or silent).
// Counts are plain numbers on the hot path; the metrics observer reads them at
// scrape time (rpcscope_internal_errors_total, rpcscope_connections_terminated_total,
// rpcscope_upstream_queue_overflow_total, rpcscope_connections_overflow_total).
import type { Logger } from '../log.ts';
import { sourceStack } from '../source-stack.ts';

/** Where a contained fault was raised: the boundaries that catch them. */
export const FAULT_SITES = ['listener', 'relay', 'forward_h1', 'forward_h2', 'forward_upgrade', 'observer', 'admin'] as const;
export type FaultSite = (typeof FAULT_SITES)[number];

/**
 * Why the sidecar itself ended a client connection:
 * - `reset_flood`: the client reset streams before the proxy could read them,
 *   faster than its budget (the CVE-2023-44487 rapid-reset shape); GOAWAY ENHANCE_YOUR_CALM.
 * - `ping_flood`, `settings_flood`: the client sent PING or SETTINGS frames, each
 *   owed an ACK, faster than its budget (h2/control-frame-budget.ts); GOAWAY ENHANCE_YOUR_CALM.
 * - `control_frame_flood`: nghttp2 found 1000 ACKs queued that the client did not
 *   read (a flood past the budgets, or a client that never reads); GOAWAY ENHANCE_YOUR_CALM.
 * - `continuation_flood`: a header block went on in more CONTINUATION frames than
 *   allowed (8, as nghttp2 allows; the CVE-2024-27316 shape); GOAWAY ENHANCE_YOUR_CALM.
 * - `protocol_error`: Node's HTTP/2 layer ended the session with another HTTP/2 error
 *   (nghttp2's own reset rate limit sends GOAWAY INTERNAL_ERROR; invalid frames).
 * - `first_byte_timeout`: the connection did not show its protocol in time (no TLS
 *   handshake, no HTTP/2 preface and SETTINGS, no HTTP/1.1 request line).
 * - `request_headers_timeout`: an HTTP/1.1 request's headers did not all arrive in time (slowloris); 408.
 * - `idle_timeout`: no call in flight for the idle timeout (HTTP/2: GOAWAY NO_ERROR first).
 * - `bad_request`: an HTTP/1.1 request refused before forwarding (malformed or
 *   ambiguous head, oversized headers, absolute-form target, CONNECT); 400, 405 or 431.
 * - `window_update_flood`, `priority_flood`, `empty_frame_flood`: a relayed client
 *   sent more of those frames than relay/frame-budget.ts allows; GOAWAY ENHANCE_YOUR_CALM.
 * - `stream_limit`: the client opened a stream past the SETTINGS_MAX_CONCURRENT_STREAMS
 *   it had acknowledged (RFC 9113 §5.1.2).
 * - `keepalive_timeout`: the client answered no PING (and sent nothing else) within
 *   --keepalive-timeout: it vanished without FIN or RST (its node died, the network
 *   partitioned). Its calls in flight are cancelled upstream.
 */
export const TERMINATION_REASONS = ['reset_flood', 'ping_flood', 'settings_flood', 'control_frame_flood', 'continuation_flood', 'protocol_error', 'first_byte_timeout', 'request_headers_timeout', 'idle_timeout', 'bad_request', 'window_update_flood', 'priority_flood', 'empty_frame_flood', 'stream_limit', 'keepalive_timeout'] as const;
export type TerminationReason = (typeof TERMINATION_REASONS)[number];

/**
 * Why the relay refused a client's new stream (REFUSED_STREAM, which the client
 * may send again) though the app would have taken it:
 * - `stream_limit`: 1000 streams already open on the connection, the terminating
 *   path's limit, whatever the app advertised.
 * - `memory_budget`: the connection's open streams' header lists and held request
 *   bodies already near 10 MiB (relay/relay-calls.ts, MAX_RETAINED_BYTES).
 */
export const STREAM_REFUSAL_REASONS = ['stream_limit', 'memory_budget'] as const;
export type StreamRefusalReason = (typeof STREAM_REFUSAL_REASONS)[number];

/** Which end of the sidecar a connection whose PING went unanswered was on. */
export const KEEPALIVE_SIDES = ['downstream', 'upstream'] as const;
export type KeepaliveSide = (typeof KEEPALIVE_SIDES)[number];

/**
 * Why an outbound endpoint was ejected (upstream/balancer/outlier-ejection.ts):
 * - `connect_failure`: a connection to it could not be made (refused, timed out).
 * - `keepalive_timeout`: a connection to it answered no PING within --keepalive-timeout.
 * - `connection_lost`: its connection broke under calls in flight.
 * - `unavailable`: it answered UNAVAILABLE (or 502, 503, 504) to 5 calls in a row.
 */
export const EJECTION_REASONS = ['connect_failure', 'keepalive_timeout', 'connection_lost', 'unavailable'] as const;
export type EjectionReason = (typeof EJECTION_REASONS)[number];

/** A site logs its first fault with the stack, then at most once per interval with the count since. */
const LOG_INTERVAL_MS = 60_000;

interface SiteState {
  count: number;
  loggedAt: number;
  unlogged: number;
}

export class Faults {
  private readonly sites = new Map<FaultSite, SiteState>(FAULT_SITES.map((s) => [s, { count: 0, loggedAt: -Infinity, unlogged: 0 }]));
  private readonly terminations = new Map<TerminationReason, number>(TERMINATION_REASONS.map((r) => [r, 0]));
  private queueOverflows = 0;
  private connectionOverflows = 0;
  private readonly refusals = new Map<StreamRefusalReason, number>(STREAM_REFUSAL_REASONS.map((r) => [r, 0]));
  private readonly keepaliveTimeouts = new Map<KeepaliveSide, number>(KEEPALIVE_SIDES.map((s) => [s, 0]));
  private readonly ejections = new Map<EjectionReason, number>(EJECTION_REASONS.map((r) => [r, 0]));
  /** How many endpoints sit ejected now: the balancer answers (outbound); none otherwise. */
  ejectedNow: () => number = () => 0;

  constructor(private readonly log: Logger, private readonly clock: () => number = Date.now) {}

  /** A fault contained at `where`: counted, and logged with its stack unless `where` logged one recently. */
  internalError(where: FaultSite, err: unknown): void {
    const site = this.sites.get(where)!;
    site.count++;
    const t = this.clock();
    if (t - site.loggedAt < LOG_INTERVAL_MS) {
      site.unlogged++;
      return;
    }
    const e = err instanceof Error ? err : new Error(String(err));
    this.log.error('internal error contained; the sidecar keeps serving', {
      where,
      error: e.message,
      stack: sourceStack(e.stack),
      ...(site.unlogged > 0 ? { alsoSinceLastLog: site.unlogged } : {}),
    });
    site.loggedAt = t;
    site.unlogged = 0;
  }

  /** A call found its endpoint's HTTP/1.1 connections and their queue full (--upstream-max-pending); it was answered UNAVAILABLE (503). */
  upstreamQueueFull(): void {
    this.queueOverflows++;
  }

  upstreamQueueOverflows(): number {
    return this.queueOverflows;
  }

  /** The relay refused a client's new stream for `reason`. */
  streamRefused(reason: StreamRefusalReason): void {
    this.refusals.set(reason, this.refusals.get(reason)! + 1);
  }

  streamsRefused(): ReadonlyMap<StreamRefusalReason, number> {
    return this.refusals;
  }

  /** A client connection found --max-connections open: it was closed as it was accepted, unread. */
  connectionOverLimit(): void {
    this.connectionOverflows++;
  }

  connectionsOverLimit(): number {
    return this.connectionOverflows;
  }

  /** A connection on `side` answered no PING within --keepalive-timeout and was closed. */
  keepaliveTimedOut(side: KeepaliveSide): void {
    this.keepaliveTimeouts.set(side, this.keepaliveTimeouts.get(side)! + 1);
  }

  keepaliveTimedOutCounts(): ReadonlyMap<KeepaliveSide, number> {
    return this.keepaliveTimeouts;
  }

  /** The balancer took an endpoint out of rotation for `reason`. */
  endpointEjected(reason: EjectionReason): void {
    this.ejections.set(reason, this.ejections.get(reason)! + 1);
  }

  endpointEjections(): ReadonlyMap<EjectionReason, number> {
    return this.ejections;
  }

  connectionTerminated(reason: TerminationReason): void {
    this.terminations.set(reason, this.terminations.get(reason)! + 1);
  }

  internalErrors(): ReadonlyMap<FaultSite, { count: number }> {
    return this.sites;
  }

  terminated(): ReadonlyMap<TerminationReason, number> {
    return this.terminations;
  }
}
