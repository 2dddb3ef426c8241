// HTTP/2 frames written by hand (RFC 9113 §4.1, §6), for tests that play a hostile
// client over a raw socket, and a reader for the frames the server sent back.

/** Frame types, RFC 9113 §6. */
export const FRAME = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
/** Flags: END_STREAM 0x1, END_HEADERS 0x4 (HEADERS, CONTINUATION), ACK 0x1 (SETTINGS, PING), PRIORITY 0x20 (HEADERS). */
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PRIORITY: 0x20 } as const;
/** Error codes, RFC 9113 §7. */
export const H2_ERROR = { NO_ERROR: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2, FLOW_CONTROL_ERROR: 3, STREAM_CLOSED: 5, FRAME_SIZE_ERROR: 6, REFUSED_STREAM: 7, COMPRESSION_ERROR: 9, ENHANCE_YOUR_CALM: 11 } as const;

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export function frame(type: number, flags: number, streamId: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

export function settings(entries: [id: number, value: number][] = [], flags = 0): Buffer {
  const p = Buffer.alloc(6 * entries.length);
  entries.forEach(([id, v], i) => (p.writeUInt16BE(id, 6 * i), p.writeUInt32BE(v, 6 * i + 2)));
  return frame(FRAME.SETTINGS, flags, 0, p);
}

export function ping(n: number): Buffer {
  const p = Buffer.alloc(8);
  p.writeUInt32BE(n, 4);
  return frame(FRAME.PING, 0, 0, p);
}

/** PRIORITY (RFC 9113 §6.3, deprecated but still read): a stream's dependency (none) and weight. */
export function priority(streamId: number): Buffer {
  return frame(FRAME.PRIORITY, 0, streamId, Buffer.from([0, 0, 0, 0, 15]));
}

export function windowUpdate(streamId: number, increment: number): Buffer {
  const p = Buffer.alloc(4);
  p.writeUInt32BE(increment);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, p);
}

/** HPACK (RFC 7541 §5.1): an integer with an n-bit prefix, the first byte's high bits set to `mask`. */
function hpackInt(value: number, prefixBits: number, mask: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([mask | value]);
  const out = [mask | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** A literal field without indexing, new name (RFC 7541 §6.2.2), no Huffman coding. */
export function literal(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0x00]), hpackInt(name.length, 7, 0), Buffer.from(name, 'latin1'), hpackInt(value.length, 7, 0), Buffer.from(value, 'latin1')]);
}

/**
 * A request's header block: static-table :method (GET 0x82, POST 0x83), :scheme http
 * (0x86), :path and :authority as literals with an indexed name (RFC 7541 Appendix A: 4, 1).
 */
export function requestBlock(path: string, method: 'GET' | 'POST' = 'GET', extra: Buffer[] = []): Buffer {
  const indexedName = (index: number, value: string): Buffer => Buffer.concat([hpackInt(index, 4, 0x00), hpackInt(value.length, 7, 0), Buffer.from(value, 'latin1')]);
  return Buffer.concat([Buffer.from([method === 'GET' ? 0x82 : 0x83, 0x86]), indexedName(4, path), indexedName(1, 'localhost'), ...extra]);
}

export interface ReadFrame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** The whole frames in what the server sent, after its preface-less start (a server sends no preface but SETTINGS). */
export function readFrames(bytes: Buffer): ReadFrame[] {
  const frames: ReadFrame[] = [];
  for (let o = 0; o + 9 <= bytes.length; ) {
    const length = bytes.readUIntBE(o, 3);
    if (o + 9 + length > bytes.length) break;
    frames.push({ type: bytes[o + 3]!, flags: bytes[o + 4]!, streamId: bytes.readUInt32BE(o + 5) & 0x7fffffff, payload: bytes.subarray(o + 9, o + 9 + length) });
    o += 9 + length;
  }
  return frames;
}

/** The error codes of the GOAWAY frames the server sent, in order. */
export function goawayCodes(frames: ReadFrame[]): number[] {
  return frames.filter((f) => f.type === FRAME.GOAWAY).map((f) => f.payload.readUInt32BE(4));
}

/** Stream id → the error code of the RST_STREAM the server sent on it. */
export function resets(frames: ReadFrame[]): Map<number, number> {
  return new Map(frames.filter((f) => f.type === FRAME.RST_STREAM).map((f) => [f.streamId, f.payload.readUInt32BE(0)]));
}

/** A literal field with incremental indexing, new name (RFC 7541 §6.2.1): the decoder adds it to its dynamic table. */
export function indexedLiteral(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0x40]), hpackInt(name.length, 7, 0), Buffer.from(name, 'latin1'), hpackInt(value.length, 7, 0), Buffer.from(value, 'latin1')]);
}

/** A block split into HEADERS and CONTINUATIONs of at most `size` octets, END_HEADERS on the last. */
export function headerBlockFrames(streamId: number, block: Buffer, endStream: boolean, size = 16_384): Buffer[] {
  const frames: Buffer[] = [];
  for (let at = 0; at < block.length || at === 0; at += size) {
    const last = at + size >= block.length;
    frames.push(frame(at === 0 ? FRAME.HEADERS : FRAME.CONTINUATION, (at === 0 && endStream ? FLAG.END_STREAM : 0) | (last ? FLAG.END_HEADERS : 0), streamId, block.subarray(at, at + size)));
  }
  return frames;
}
