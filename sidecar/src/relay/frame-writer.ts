// Frames the relay adds to a connection itself. Header blocks are encoded so
// that they leave both HPACK tables as they were (RFC 7541 §6.2.2, literals
// without indexing; names from the static table): the block passes through no
// table, so the relayed blocks around it still decode the same.
import { FRAME_HEADER_LENGTH, Flag, FrameType } from '../h2/frame-types.ts';
import { STATIC_NAME_INDEX } from './hpack-static-table.ts';

export function frame(type: number, flags: number, streamId: number, payload: Buffer = EMPTY): Buffer {
  const out = Buffer.allocUnsafe(FRAME_HEADER_LENGTH + payload.length);
  out.writeUIntBE(payload.length, 0, 3);
  out[3] = type;
  out[4] = flags;
  out.writeUInt32BE(streamId & 0x7fffffff, 5);
  payload.copy(out, FRAME_HEADER_LENGTH);
  return out;
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

/** §5.1 integer with an N-bit prefix, the prefix's other bits set to `high`. */
function pushInt(out: number[], value: number, prefix: number, high: number): void {
  const max = (1 << prefix) - 1;
  if (value < max) {
    out.push(high | value);
    return;
  }
  out.push(high | max);
  value -= max;
  while (value >= 128) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
}

function pushString(out: number[], s: string): void {
  const bytes = Buffer.from(s, 'latin1');
  pushInt(out, bytes.length, 7, 0);
  for (const b of bytes) out.push(b);
}

/**
 * A header block of literals without indexing. `sizeUpdate` starts it with a
 * dynamic table size update (§6.3): the first block a decoder reads after a
 * table size change in SETTINGS must carry one (§4.2).
 */
export function encodeLiteralBlock(headers: readonly (readonly [string, string])[], sizeUpdate?: number): Buffer {
  const out: number[] = [];
  if (sizeUpdate !== undefined) pushInt(out, sizeUpdate, 5, 0x20);
  for (const [name, value] of headers) {
    const index = STATIC_NAME_INDEX.get(name);
    if (index !== undefined) pushInt(out, index, 4, 0);
    else {
      out.push(0);
      pushString(out, name);
    }
    pushString(out, value);
  }
  return Buffer.from(out);
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
