// gRPC's length-prefixed messages (grpc/grpc PROTOCOL-HTTP2.md, "Length-Prefixed-Message"):
// a flag byte (bit 0: compressed; bit 7 marks gRPC-Web's trailer frame,
// PROTOCOL-WEB.md), a 4-byte big-endian length, then the message. The
// translating paths must hold whole messages, which the plain proxy never does.

export const TRAILER_FLAG = 0x80;
export const COMPRESSED_FLAG = 0x01;

export function frame(message: Uint8Array, flags = 0): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = flags;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

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
    while (this.pending.length >= 5) {
      const length = this.pending.readUInt32BE(1);
      if (length > this.maxBytes) throw new Error(`message of ${length} bytes is over the ${this.maxBytes}-byte limit`);
      if (this.pending.length < 5 + length) break;
      frames.push({ flags: this.pending[0]!, message: this.pending.subarray(5, 5 + length) });
      this.pending = this.pending.subarray(5 + length);
    }
    return frames;
  }

  /** Bytes of an incomplete frame left over. */
  get leftover(): number {
    return this.pending.length;
  }
}
