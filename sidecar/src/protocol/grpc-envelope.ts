// The length-prefixed message every gRPC-family protocol frames its messages in
// (gRPC PROTOCOL-HTTP2.md "Length-Prefixed-Message"; gRPC-Web PROTOCOL-WEB.md and
// Connect's streaming protocol use the same): 1 flag byte, a 4-byte big-endian
// length, then the payload. Written once here for the counting reader
// (message-framing.ts), the translating paths' whole-message reader
// (transcode/grpc-frame.ts) and the sidecar's own answers (protocol/local-reply.ts).

/** Bytes before the payload: the flag byte and the length. */
export const ENVELOPE_HEADER_BYTES = 5;

/** The flag byte's bits. */
export const EnvelopeFlag = {
  /** The payload is compressed with the call's grpc-encoding / connect-content-encoding. */
  COMPRESSED: 0x01,
  /** Connect streaming: the end-stream message, a JSON object with an optional `error`. */
  CONNECT_END_STREAM: 0x02,
  /** gRPC-Web: the trailer frame, HTTP/1-style header lines (`grpc-status:0\r\n`). */
  GRPC_WEB_TRAILERS: 0x80,
} as const;

/** The 5-byte header of a message of `length` bytes. */
export function envelopeHeader(flags: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(ENVELOPE_HEADER_BYTES);
  header[0] = flags;
  header.writeUInt32BE(length, 1);
  return header;
}

/** `message` in its envelope, as one buffer. */
export function envelope(message: Uint8Array, flags = 0): Buffer {
  const out = Buffer.allocUnsafe(ENVELOPE_HEADER_BYTES + message.length);
  out[0] = flags;
  out.writeUInt32BE(message.length, 1);
  out.set(message, ENVELOPE_HEADER_BYTES);
  return out;
}

/** The payload length a header at `offset` of `buf` announces (the header's 5 bytes must be there). */
export function envelopeLength(buf: Buffer, offset = 0): number {
  return buf.readUInt32BE(offset + 1);
}
