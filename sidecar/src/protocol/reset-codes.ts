// HTTP/2 error codes: their names for the `error_code` label, and the gRPC
// status a call ended by a reset gets.
import { CONNECTION_CLOSED, type ResetSide } from './vocabulary.ts';
import { GrpcCode } from './status-codes.ts';

/** HTTP/2 error codes, RFC 9113 §7 (also RST_STREAM's and GOAWAY's); the key is the `error_code` label. */
export const Http2Error = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  SETTINGS_TIMEOUT: 0x4,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  CONNECT_ERROR: 0xa,
  ENHANCE_YOUR_CALM: 0xb,
  INADEQUATE_SECURITY: 0xc,
  HTTP_1_1_REQUIRED: 0xd,
} as const;

const HTTP2_ERROR_NAMES: readonly string[] = Object.keys(Http2Error);

/**
 * The label for a reset's code. RFC 9113 §7 lets an endpoint treat a code it
 * does not know as INTERNAL_ERROR; doing so here also keeps the label bounded.
 * An HTTP/1.1 connection closed mid-call has no code of its own: docs/metrics.md
 * names it CONNECTION_CLOSED.
 */
export function http2ErrorName(code: number): string {
  if (code === CONNECTION_CLOSED) return 'CONNECTION_CLOSED';
  return HTTP2_ERROR_NAMES[code] ?? 'INTERNAL_ERROR';
}

/**
 * The gRPC status of a call ended by a reset, as gRPC clients report it:
 * grpc/grpc doc/PROTOCOL-HTTP2.md ("Errors") and grpc-js subchannel-call.ts,
 * which is the model for this switch.
 */
export function resetToGrpcCode(code: number, side: ResetSide): number {
  switch (code) {
    case Http2Error.CANCEL:
      return GrpcCode.CANCELLED;
    case Http2Error.REFUSED_STREAM:
      // The upstream refused before doing any work: safe to retry elsewhere.
      return GrpcCode.UNAVAILABLE;
    case Http2Error.ENHANCE_YOUR_CALM:
      // The peer is shedding load (too many streams or pings).
      return GrpcCode.RESOURCE_EXHAUSTED;
    case Http2Error.INADEQUATE_SECURITY:
      // PROTOCOL-HTTP2.md and grpc-js both give PERMISSION_DENIED here.
      return GrpcCode.PERMISSION_DENIED;
    case CONNECTION_CLOSED:
      // HTTP/1.1 has no reset: a client closing its connection mid-call has
      // given up on it, as with CANCEL; the upstream (or the proxy) dropping the
      // connection is what grpc-js reports as "Connection dropped", UNAVAILABLE.
      return side === 'client' ? GrpcCode.CANCELLED : GrpcCode.UNAVAILABLE;
    default:
      // NO_ERROR before a status, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, ...
      return GrpcCode.INTERNAL;
  }
}
