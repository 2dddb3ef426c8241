// Length-prefixed message framing, counted on the fly as chunks pass through:
// nothing is buffered but a 5-byte header and, for the one frame that carries a
// status, its payload.
//
// The envelope and its flags: grpc-envelope.ts. gRPC-Web text mode sends the
// same bytes base64-encoded, possibly as several padded base64 runs one after
// another.

import { ENVELOPE_HEADER_BYTES, EnvelopeFlag, envelopeLength } from './grpc-envelope.ts';

const GRPC_WEB_TRAILER_FLAG = EnvelopeFlag.GRPC_WEB_TRAILERS;
const CONNECT_END_STREAM_FLAG = EnvelopeFlag.CONNECT_END_STREAM;
/** A status frame larger than this is not a status frame we will read. */
const MAX_END_FRAME_BYTES = 64 * 1024;

export type EndFrameKind = 'grpc_web_trailers' | 'connect_end_stream';

export class MessageCounter {
  /** Complete data messages seen (status frames excluded). */
  messages = 0;
  /** Payload of the trailer / end-stream frame, once complete. */
  endFrame: Buffer | undefined;
  endFrameKind: EndFrameKind | undefined;

  private readonly endFlag: number;
  private readonly onFirstMessage: (() => void) | undefined;
  /** Octets of the current envelope header read so far, and the length they hold (its flags are `flags`). */
  private headerFill = 0;
  private length = 0;
  /** Payload bytes left in the current frame; -1 while reading a header. */
  private remaining = -1;
  private flags = 0;
  private capture: Buffer[] | undefined;
  private base64Carry = '';

  /**
   * @param endFlag the flag bit that marks a status frame for this protocol (0 for plain gRPC)
   * @param base64 the body is gRPC-Web text (base64)
   */
  constructor(endFlag: number, private readonly base64: boolean, onFirstMessage?: () => void) {
    this.endFlag = endFlag;
    this.onFirstMessage = onFirstMessage;
  }

  static forProtocol(protocol: string, base64: boolean, onFirstMessage?: () => void): MessageCounter {
    const flag = protocol === 'grpc_web' ? GRPC_WEB_TRAILER_FLAG : protocol === 'connect' ? CONNECT_END_STREAM_FLAG : 0;
    return new MessageCounter(flag, base64, onFirstMessage);
  }

  push(chunk: Buffer): void {
    if (this.base64) {
      const text = this.base64Carry + chunk.toString('latin1');
      const usable = text.length - (text.length % 4);
      this.base64Carry = text.slice(usable);
      if (usable === 0) return;
      this.consume(decodeBase64Runs(usable === text.length ? text : text.slice(0, usable)));
      return;
    }
    this.consume(chunk);
  }

  private consume(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    while (i < n) {
      if (this.remaining < 0) {
        if (this.headerFill === 0 && n - i >= ENVELOPE_HEADER_BYTES) {
          // The whole header in this piece: read in place.
          this.flags = buf[i]!;
          this.remaining = envelopeLength(buf, i);
          i += ENVELOPE_HEADER_BYTES;
        } else {
          // Cut across pieces: the flags octet, then the length's four, big-endian (grpc-envelope.ts).
          while (this.headerFill < ENVELOPE_HEADER_BYTES && i < n) {
            const octet = buf[i++]!;
            if (this.headerFill === 0) this.flags = octet;
            else this.length = this.length * 256 + octet;
            this.headerFill++;
          }
          if (this.headerFill < ENVELOPE_HEADER_BYTES) return;
          this.headerFill = 0;
          this.remaining = this.length;
          this.length = 0;
        }
        this.capture = this.isEndFrame() && this.remaining <= MAX_END_FRAME_BYTES ? [] : undefined;
        if (this.remaining === 0) this.frameDone();
        continue;
      }
      const take = Math.min(this.remaining, n - i);
      if (this.capture) this.capture.push(buf.subarray(i, i + take));
      this.remaining -= take;
      i += take;
      if (this.remaining === 0) this.frameDone();
    }
  }

  /** No frame begun and not finished: a frame of the proxy's own may follow without corrupting the body. */
  get atBoundary(): boolean {
    return this.remaining < 0 && this.headerFill === 0 && this.base64Carry === '';
  }

  private isEndFrame(): boolean {
    return this.endFlag !== 0 && (this.flags & this.endFlag) !== 0;
  }

  private frameDone(): void {
    this.remaining = -1;
    if (this.isEndFrame()) {
      if (this.capture) {
        this.endFrame = Buffer.concat(this.capture);
        this.endFrameKind = this.endFlag === GRPC_WEB_TRAILER_FLAG ? 'grpc_web_trailers' : 'connect_end_stream';
      }
      this.capture = undefined;
      return;
    }
    this.messages++;
    if (this.messages === 1 && this.onFirstMessage) this.onFirstMessage();
  }
}

/**
 * Decodes whole 4-character groups that may hold padded runs back to back (each
 * gRPC-Web text frame may be encoded on its own). Node's decoder stops at the first
 * `=`, dropping every run after it: each run that ends padded is decoded apart.
 */
export function decodeBase64Runs(text: string): Buffer {
  let pad = text.indexOf('=');
  if (pad < 0 || pad >= text.length - 2) return Buffer.from(text, 'base64');
  const runs: Buffer[] = [];
  let from = 0;
  while (pad >= 0) {
    const end = (Math.floor(pad / 4) + 1) * 4;
    runs.push(Buffer.from(text.slice(from, end), 'base64'));
    from = end;
    pad = text.indexOf('=', from);
  }
  if (from < text.length) runs.push(Buffer.from(text.slice(from), 'base64'));
  return Buffer.concat(runs);
}

/** `grpc-status` from a gRPC-Web trailer frame's header lines, or undefined. */
export function grpcStatusFromTrailerFrame(payload: Buffer): number | undefined {
  const text = payload.toString('latin1');
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    if (line.slice(0, colon).trim().toLowerCase() === 'grpc-status') return parseStatus(line.slice(colon + 1).trim());
  }
  return undefined;
}

/** A status header value as a number, when it is one (0–16 are defined; others pass as numbers). */
export function parseStatus(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,3}$/.test(value)) return undefined;
  return Number(value);
}

/**
 * The error code string of a Connect end-stream message (`{"error":{"code":"not_found"}}`)
 * or of a Connect unary error body (`{"code":"not_found","message":"..."}`); undefined when
 * the JSON carries no error, `null` when it is not valid JSON.
 */
export function connectErrorCode(json: Buffer, endStream: boolean): string | undefined | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json.toString('utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const holder = endStream ? (parsed as { error?: unknown }).error : parsed;
  if (holder === undefined || holder === null) return undefined;
  const code = (holder as { code?: unknown }).code;
  return typeof code === 'string' ? code : endStream ? 'unknown' : null;
}
