// gRPC's length-prefixed messages, whole (the envelope: protocol/grpc-envelope.ts).
// The translating paths must hold whole messages, which the plain proxy never does.
import { ENVELOPE_HEADER_BYTES, envelopeLength } from '../protocol/grpc-envelope.ts';

export interface Frame {
  flags: number;
  message: Buffer;
}

/** Cuts a byte stream into frames as chunks arrive; a frame above `maxBytes` is an error, never a buffer without bound. */
export class FrameReader {
  private pending: Buffer = Buffer.alloc(0);

  constructor(private readonly maxBytes: number) {}

  push(chunk: Buffer): Frame[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Frame[] = [];
    while (this.pending.length >= ENVELOPE_HEADER_BYTES) {
      const length = envelopeLength(this.pending);
      if (length > this.maxBytes) throw new Error(`message of ${length} bytes is over the ${this.maxBytes}-byte limit`);
      const end = ENVELOPE_HEADER_BYTES + length;
      if (this.pending.length < end) break;
      frames.push({ flags: this.pending[0]!, message: this.pending.subarray(ENVELOPE_HEADER_BYTES, end) });
      this.pending = this.pending.subarray(end);
    }
    return frames;
  }

  /** Bytes of an incomplete frame left over. */
  get leftover(): number {
    return this.pending.length;
  }
}
