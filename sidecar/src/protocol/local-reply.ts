// Answers the sidecar gives itself when the upstream cannot: shaped for each
// protocol so that every caller reads the failure the way its own library
// expects — a gRPC status for the gRPC family, an error body for Connect, an HTTP
// status for REST.
import type http2 from 'node:http2';
import type { Protocol } from './vocabulary.ts';
import type { CallTap } from './call-tap.ts';
import type { Detected } from './detect.ts';
import { GrpcCode } from './status-codes.ts';
import { EnvelopeFlag, envelope } from './grpc-envelope.ts';

/** The failures the sidecar itself reports. */
export type LocalCode = typeof GrpcCode.UNAVAILABLE | typeof GrpcCode.DEADLINE_EXCEEDED | typeof GrpcCode.INTERNAL;

const CONNECT_CODE: Record<LocalCode, string> = { [GrpcCode.UNAVAILABLE]: 'unavailable', [GrpcCode.DEADLINE_EXCEEDED]: 'deadline_exceeded', [GrpcCode.INTERNAL]: 'internal' };
// Connect unary errors carry an HTTP status chosen by code (connectrpc.com/docs/protocol#error-codes).
const CONNECT_HTTP_STATUS: Record<LocalCode, number> = { [GrpcCode.UNAVAILABLE]: 503, [GrpcCode.DEADLINE_EXCEEDED]: 504, [GrpcCode.INTERNAL]: 500 };
// REST: the same failures as a gateway reports them.
const REST_STATUS: Record<LocalCode, number> = { [GrpcCode.UNAVAILABLE]: 503, [GrpcCode.DEADLINE_EXCEEDED]: 504, [GrpcCode.INTERNAL]: 502 };

export interface LocalReply {
  status: number;
  headers: Record<string, string>;
  body: Buffer | undefined;
}

/**
 * `grpc-message` percent-encodes only what is not printable ASCII, and `%`
 * (PROTOCOL-HTTP2.md, "Status-Message"): clients decode no more than that, so a
 * `/` or `;` encoded here would reach the caller as `%2F` or `%3B`.
 */
function grpcMessage(text: string): string {
  return text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}

export function localReply(protocol: Protocol, framed: boolean, requestContentType: string | undefined, code: LocalCode, message: string): LocalReply {
  switch (protocol) {
    case 'grpc':
    case 'grpc_web':
      // Trailers-only: the status rides in the one header block.
      return {
        status: 200,
        headers: { 'content-type': requestContentType || (protocol === 'grpc' ? 'application/grpc' : 'application/grpc-web'), 'grpc-status': String(code), 'grpc-message': grpcMessage(message) },
        body: undefined,
      };
    case 'connect': {
      const error = { code: CONNECT_CODE[code], message };
      if (framed) {
        // Streaming: a 200 whose only frame is the end-stream message.
        const json = Buffer.from(JSON.stringify({ error }));
        return { status: 200, headers: { 'content-type': requestContentType || 'application/connect+json' }, body: envelope(json, EnvelopeFlag.CONNECT_END_STREAM) };
      }
      return { status: CONNECT_HTTP_STATUS[code], headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(error)) };
    }
    case 'rest':
    case 'trpc':
      return { status: REST_STATUS[code], headers: { 'content-type': 'text/plain; charset=utf-8' }, body: Buffer.from(`rpcscope: ${message}\n`) };
  }
}

/** The message a caller reads when its upstream's connection broke mid-response. */
export const UPSTREAM_LOST = 'upstream connection lost';

/** How a response already begun is ended when its upstream's connection broke. */
export interface LostEnding {
  /** A status frame to append to the body (gRPC-Web trailer frame, Connect end-stream message). */
  body?: Buffer;
  /** HTTP/2 trailers to end with (gRPC). */
  trailers?: Record<string, string>;
}

/**
 * Ends a response the upstream left unfinished as UNAVAILABLE, in the framing the
 * caller's protocol ends streams with (PROTOCOL-HTTP2.md trailers, PROTOCOL-WEB.md
 * trailer frame, connectrpc.com/docs/protocol end-stream message), so that the
 * caller never reads it as its own cancellation; undefined where the protocol has
 * no such ending (REST, Connect unary): the body is then aborted. `trailersAllowed`:
 * the caller's transport can carry trailers (HTTP/2).
 */
export function upstreamLostEnding(protocol: Protocol, framed: boolean, base64: boolean, trailersAllowed: boolean): LostEnding | undefined {
  switch (protocol) {
    case 'grpc':
      return trailersAllowed ? { trailers: { 'grpc-status': String(GrpcCode.UNAVAILABLE), 'grpc-message': grpcMessage(UPSTREAM_LOST) } } : undefined;
    case 'grpc_web': {
      if (!framed) return undefined;
      const lines = Buffer.from(`grpc-status:${GrpcCode.UNAVAILABLE}\r\ngrpc-message:${grpcMessage(UPSTREAM_LOST)}\r\n`);
      const frame = envelope(lines, EnvelopeFlag.GRPC_WEB_TRAILERS);
      return { body: base64 ? Buffer.from(frame.toString('base64')) : frame };
    }
    case 'connect':
      return framed ? { body: localReply('connect', true, undefined, GrpcCode.UNAVAILABLE, UPSTREAM_LOST).body! } : undefined;
    case 'rest':
    case 'trpc':
      return undefined;
  }
}

// Node's respond() also takes `sendDate`, which its type definitions leave out.
// Off: the caller sees the proxy's answer, not a date header of its own.
type RespondOptions = http2.ServerStreamResponseOptions & { sendDate: false };
const REPLY_WITHOUT_BODY: RespondOptions = { endStream: true, sendDate: false };
const REPLY_WITH_BODY: RespondOptions = { sendDate: false };

/** Answers an HTTP/2 caller from the proxy itself, in its protocol's words, counted on the call's tap. */
export function replyOnH2(stream: http2.ServerHttp2Stream, tap: CallTap, detected: Detected, contentType: string | undefined, code: LocalCode, message: string): void {
  const r = localReply(detected.protocol, detected.framed, contentType, code, message);
  tap.responseHeaders(r.status, r.headers);
  if (r.body) tap.responseData(r.body);
  stream.respond({ ':status': r.status, ...r.headers }, r.body ? REPLY_WITH_BODY : REPLY_WITHOUT_BODY);
  if (r.body) stream.end(r.body);
  // The client may still be sending: it has its answer, so let the rest drain away.
  if (!stream.readableEnded) stream.resume();
}
