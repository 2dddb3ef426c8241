// The words the data plane and observation share: what protocol a call speaks,
// how its body is encoded, who reset it, which header carried its deadline.
// The data plane (listen/, relay/, proxy/, protocol/) fills call records in
// these terms and observation (observe/) reads them; both import them from here,
// and nothing in protocol/ imports observe/.
import type { TrpcCall } from './trpc-call.ts';

export type Direction = 'inbound' | 'outbound';
export type Protocol = 'grpc' | 'grpc_web' | 'connect' | 'rest' | 'trpc';
export type Encoding = 'proto' | 'json' | 'text' | 'other';
export type HttpVersion = '1.1' | '2';
/** Who sent a reset (or, on HTTP/1.1, who closed the connection mid-call). */
export type ResetSide = 'client' | 'upstream' | 'proxy';
export type DeadlineHeader = 'grpc-timeout' | 'connect-timeout-ms';

/** HTTP/1.1 has no RST_STREAM: a connection closed mid-call is recorded with this code. */
export const CONNECTION_CLOSED = -1;

/**
 * The methods a 405 to CONNECT names in its Allow field (RFC 9110 §15.5.6): every
 * one but CONNECT is forwarded, on either data plane.
 */
export const ALLOWED_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

export interface CallReset {
  side: ResetSide;
  /** HTTP/2 error code (RFC 9113 §7), or CONNECTION_CLOSED for an HTTP/1.1 connection closed mid-call. */
  code: number;
}

export interface CallDeadline {
  header: DeadlineHeader;
  /** The header value as received; never used as a label. */
  raw: string;
  /** The budget in milliseconds, or undefined when the header could not be parsed. */
  ms: number | undefined;
}

/**
 * The facts a call's bytes tell as they pass (protocol/call-tap.ts writes them):
 * the part of the call record the protocol layer fills in. The call record
 * (call/call-record.ts) has these fields and more.
 */
export interface TappedFacts {
  readonly protocol: Protocol;
  readonly framed: boolean;
  readonly trpc: TrpcCall | undefined;
  httpStatus: number;
  requestBytes: number;
  responseBytes: number;
  requestMessages: number;
  responseMessages: number;
  firstResponseMessageTime: number | undefined;
  grpcStatus: number | undefined;
  connectCode: string | undefined;
  connectEndStream: boolean;
}
