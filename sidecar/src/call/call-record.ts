// The per-call record: everything the data plane learns about one call, handed
// to the observer when the call starts and again when it ends. The proxy fills
// it in as the call goes; nothing here is computed for metrics' sake alone.
import type { TrpcCall } from '../protocol/trpc-call.ts';
import type { Route } from '../route/router.ts';
import type { CallDeadline, CallReset, Direction, Encoding, HttpVersion, Protocol } from '../protocol/vocabulary.ts';

// The shared vocabulary lives in protocol/vocabulary.ts; re-exported for the
// modules that still name it from here.
export { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
export type { CallDeadline, CallReset, DeadlineHeader, Direction, Encoding, HttpVersion, Protocol, ResetSide } from '../protocol/vocabulary.ts';

export interface CallRecord {
  readonly id: number;
  direction: Direction;
  protocol: Protocol;
  encoding: Encoding;
  /** Whether the protocol frames the body as length-prefixed messages (gRPC family, Connect streaming). */
  framed: boolean;
  /** The HTTP version the caller spoke. */
  httpVersion: HttpVersion;
  /** The request's HTTP method (`GET`, `POST`, ...). */
  httpMethod: string;
  /** The request path without its query string; input for routing, never a label itself. */
  path: string;
  /** The downstream connection that carried the call. */
  connectionId: number;
  /**
   * The call's route (its `method` and `operation` labels, its shape), resolved
   * once when the call starts, on either data plane; metrics, span names and the
   * access log all use it. Undefined only on records built outside the pipeline.
   */
  route: Route | undefined;

  // Times are performance.now() milliseconds (monotonic).
  /** Request headers received from the caller. */
  startTime: number;
  /**
   * The request went on toward the upstream over a connection that was up
   * (undefined if it never was): setting up a connection is the sidecar's part
   * of a call, not the upstream's.
   */
  upstreamStartTime: number | undefined;
  /** Response headers received from the upstream (undefined if none came). */
  upstreamHeadersTime: number | undefined;
  /** First complete response message seen (framed protocols). */
  firstResponseMessageTime: number | undefined;
  /** The upstream's response ended (END_STREAM, trailers, or body end). */
  upstreamEndTime: number | undefined;
  /** The response ended toward the caller, or the call was reset/abandoned. */
  endTime: number;

  requestBytes: number;
  responseBytes: number;
  requestMessages: number;
  responseMessages: number;

  /** HTTP status sent to the caller; 0 when the call ended without one. */
  httpStatus: number;
  /** gRPC status from trailers, a trailers-only header block or a gRPC-Web trailer frame. */
  grpcStatus: number | undefined;
  /** Connect error code string (`not_found`, ...) from an error body or end-stream message. */
  connectCode: string | undefined;
  /** Whether a Connect end-stream message was seen (streaming Connect; no error means OK). */
  connectEndStream: boolean;
  /** A reset (or HTTP/1.1 close) that ended the call before its response completed. */
  reset: CallReset | undefined;
  /** The upstream could not be reached (connect refused, DNS failure, TLS failure). */
  upstreamUnreachable: boolean;
  /**
   * The endpoint was busy, not down: its HTTP/1.1 connections and queue were full
   * (--upstream-max-pending), and the call was answered UNAVAILABLE without
   * reaching it. The balancer neither backs it off nor learns a latency from it.
   */
  upstreamBusy: boolean;
  /**
   * The upstream's connection broke (or its PING went unanswered) with the call
   * in flight: the caller was answered UNAVAILABLE, or its stream cut. The
   * balancer takes it as the endpoint failing.
   */
  upstreamLost: boolean;
  /** The deadline header the caller sent, if any. */
  deadline: CallDeadline | undefined;
  /** The sidecar's own deadline enforcement ended the call. */
  deadlineEnforced: boolean;
  /** The upstream endpoint the call was sent to, as `ip:port` (empty when none was picked). */
  upstream: string;
  /**
   * tRPC: the procedures this one HTTP call carries (several for a batch), each
   * with its own outcome. The record itself stays the HTTP call.
   */
  trpc: TrpcCall | undefined;

  /** Opaque slot for the observer: set in callStarted, read back in callEnded. */
  observation: unknown;
}

export function newCallRecord(id: number, init: Pick<CallRecord, 'direction' | 'protocol' | 'encoding' | 'framed' | 'httpVersion' | 'httpMethod' | 'path' | 'connectionId' | 'startTime'>): CallRecord {
  // Written out, not spread: one object shape for every record, built in one step.
  return {
    id,
    direction: init.direction,
    protocol: init.protocol,
    encoding: init.encoding,
    framed: init.framed,
    httpVersion: init.httpVersion,
    httpMethod: init.httpMethod,
    path: init.path,
    connectionId: init.connectionId,
    startTime: init.startTime,
    route: undefined,
    upstreamStartTime: undefined,
    upstreamHeadersTime: undefined,
    firstResponseMessageTime: undefined,
    upstreamEndTime: undefined,
    endTime: 0,
    requestBytes: 0,
    responseBytes: 0,
    requestMessages: 0,
    responseMessages: 0,
    httpStatus: 0,
    grpcStatus: undefined,
    connectCode: undefined,
    connectEndStream: false,
    reset: undefined,
    upstreamUnreachable: false,
    upstreamBusy: false,
    upstreamLost: false,
    deadline: undefined,
    deadlineEnforced: false,
    upstream: '',
    trpc: undefined,
    observation: undefined,
  };
}
