// HTTP/2 frames as bytes (RFC 9113 §4.1, §6): what a sender of frames of its
// own writes, the relay among them. The header blocks they carry are the
// caller's to encode.
import { FRAME_HEADER_LENGTH, Flag, FrameType } from './frame-types.ts';

export function frame(type: number, flags: number, streamId: number, payload: Buffer = EMPTY): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + payload.length);
  writeFrameHeader(out, 0, payload.length, type, flags, streamId);
  payload.copy(out, FRAME_HEADER_LENGTH);
  return out;
}

/** Writes a frame header (RFC 9113 §4.1) into `b` at `at`: 24-bit length, type, flags, the reserved bit cleared and a 31-bit stream id. */
export function writeFrameHeader(b: Buffer, at: number, length: number, type: number, flags: number, streamId: number): void {
  b[at] = length >>> 16;
  b[at + 1] = (length >>> 8) & 0xff;
  b[at + 2] = length & 0xff;
  b[at + 3] = type;
  b[at + 4] = flags;
  b.writeUInt32BE(streamId & 0x7fffffff, at + 5);
}

const EMPTY = Buffer.alloc(0);

/** An empty SETTINGS frame: every setting at its initial value (RFC 9113 §6.5). */
export const EMPTY_SETTINGS = frame(FrameType.SETTINGS, 0, 0);
export const SETTINGS_ACK = frame(FrameType.SETTINGS, Flag.ACK, 0);

export function goawayFrame(lastStreamId: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(8);
  p.writeUInt32BE(lastStreamId & 0x7fffffff, 0);
  p.writeUInt32BE(code, 4);
  return frame(FrameType.GOAWAY, 0, 0, p);
}

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(increment & 0x7fffffff, 0);
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, p);
}

export function rstStreamFrame(streamId: number, code: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(code, 0);
  return frame(FrameType.RST_STREAM, 0, streamId, p);
}

export function headersFrame(streamId: number, block: Buffer, endStream: boolean): Buffer {
  return frame(FrameType.HEADERS, Flag.END_HEADERS | (endStream ? Flag.END_STREAM : 0), streamId, block);
}

/** A header block as HEADERS and, past `maxFrame` octets, CONTINUATIONs (RFC 9113 §6.10). */
export function headerBlockFrames(streamId: number, block: Buffer, endStream: boolean, maxFrame: number): Buffer {
  const end = endStream ? Flag.END_STREAM : 0;
  if (block.length <= maxFrame) return frame(FrameType.HEADERS, Flag.END_HEADERS | end, streamId, block);
  const frames: Buffer[] = [];
  for (let at = 0; at < block.length; at += maxFrame) {
    const last = at + maxFrame >= block.length;
    frames.push(frame(at === 0 ? FrameType.HEADERS : FrameType.CONTINUATION, (at === 0 ? end : 0) | (last ? Flag.END_HEADERS : 0), streamId, block.subarray(at, at + maxFrame)));
  }
  return Buffer.concat(frames);
}

export function dataFrame(streamId: number, body: Buffer, endStream: boolean): Buffer {
  return frame(FrameType.DATA, endStream ? Flag.END_STREAM : 0, streamId, body);
}
