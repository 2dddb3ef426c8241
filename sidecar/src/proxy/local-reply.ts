// Answers the sidecar gives itself when the upstream cannot: shaped for each
// protocol so that every caller reads the failure the way its own library
// expects — a gRPC status for the gRPC family, an error body for Connect, an HTTP
// status for REST.
import type { Protocol } from '../observe/call-record.ts';
import { GrpcCode } from '../protocol/status-codes.ts';

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
        // Streaming: a 200 whose only frame is the end-stream message (flag 0x02).
        const json = Buffer.from(JSON.stringify({ error }));
        const envelope = Buffer.alloc(5);
        envelope[0] = 0x02;
        envelope.writeUInt32BE(json.length, 1);
        return { status: 200, headers: { 'content-type': requestContentType || 'application/connect+json' }, body: Buffer.concat([envelope, json]) };
      }
      return { status: CONNECT_HTTP_STATUS[code], headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify(error)) };
    }
    case 'rest':
      return { status: REST_STATUS[code], headers: { 'content-type': 'text/plain; charset=utf-8' }, body: Buffer.from(`rpcscope: ${message}\n`) };
  }
}
