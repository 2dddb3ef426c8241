// A streaming HTTP/2 frame reader for one direction of a relayed connection.
// It reads the bytes as they pass, in whatever pieces the socket delivers (one
// byte at a time works), and tells its sink what they mean: header blocks
// (HEADERS + CONTINUATION, reassembled), DATA payloads without their padding,
// and the control frames. DATA is never buffered; a header block is, up to a cap.
//
// Given `pass`, it also splits the bytes for translate mode: every byte of the
// preface and of every frame but a header block's goes to `pass`, in order and
// unchanged; a header block's frames go nowhere, and the sink, which hears of
// the block once whole, writes it anew at that point of the stream.
import { ErrorCode, RpcscopeError } from '../core/errors.ts';
import { CLIENT_PREFACE, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LENGTH, Flag, FrameType, LARGEST_FRAME_SIZE, MAX_WINDOW, Setting } from '../h2/frame-types.ts';
import type { HeaderList, HpackDecoder, HpackError } from './hpack-decoder.ts';

export interface FrameSink {
  /** A complete header block: HEADERS (or PUSH_PROMISE) and its CONTINUATIONs. `flags` are the first frame's. */
  headers(streamId: number, flags: number, block: Buffer, promisedId: number): void;
  /** Part of a DATA frame's payload, padding excluded; `last` on the frame's final part. */
  data(streamId: number, chunk: Buffer, flags: number, last: boolean): void;
  /**
   * `payload` (here and below) views the frame's payload: where it lies in the
   * piece being read, right after its header (`inPiece`), the relay may rewrite it.
   */
  rstStream(streamId: number, code: number, payload: Buffer): void;
  settings(flags: number, payload: Buffer): void;
  goaway(lastStreamId: number, code: number, payload: Buffer): void;
  /** A WINDOW_UPDATE (stream 0: the connection's window). */
  windowUpdate(streamId: number, increment: number, payload: Buffer): void;
  ping(flags: number, payload: Buffer): void;
  /** Any other complete frame (PRIORITY, unknown types): header only. */
  other(type: number, flags: number, streamId: number, length: number): void;
}

export class FrameError extends RpcscopeError {
  constructor(readonly h2Code: number, message: string) {
    super(ErrorCode.H2_FRAME, message);
    this.name = 'FrameError';
  }
}

/** A header block decoded by `hpack`; one that cannot be is a connection error (COMPRESSION_ERROR, RFC 9113 §4.3). */
export function decoded(hpack: HpackDecoder, block: Buffer): HeaderList {
  try {
    return hpack.decode(block);
  } catch (err) {
    throw new FrameError(COMPRESSION_ERROR, (err as HpackError).message);
  }
}

/** The frames of a header block, which translate mode writes anew. */
function isHeaderBlock(type: number): boolean {
  return type === FrameType.HEADERS || type === FrameType.CONTINUATION || type === FrameType.PUSH_PROMISE;
}

const PROTOCOL_ERROR = 0x1;
const FLOW_CONTROL_ERROR = 0x3;
const FRAME_SIZE_ERROR = 0x6;
const COMPRESSION_ERROR = 0x9;
const ENHANCE_YOUR_CALM = 0xb;

/**
 * SETTINGS values no endpoint may send (RFC 9113 §6.5.2), and the connection
 * error each is. The relay ends the connection itself rather than pass them on:
 * an app that read one would GOAWAY the whole upstream connection, every other
 * call of the client on it with it.
 */
function invalidSetting(id: number, value: number): FrameError | undefined {
  if (id === Setting.ENABLE_PUSH && value > 1) return new FrameError(PROTOCOL_ERROR, `SETTINGS_ENABLE_PUSH ${value}: only 0 or 1 (RFC 9113 §6.5.2)`);
  if (id === Setting.INITIAL_WINDOW_SIZE && value > MAX_WINDOW) return new FrameError(FLOW_CONTROL_ERROR, `SETTINGS_INITIAL_WINDOW_SIZE ${value} over 2^31-1 (RFC 9113 §6.5.2)`);
  if (id === Setting.MAX_FRAME_SIZE && (value < DEFAULT_MAX_FRAME_SIZE || value > LARGEST_FRAME_SIZE)) return new FrameError(PROTOCOL_ERROR, `SETTINGS_MAX_FRAME_SIZE ${value} outside 2^14 to 2^24-1 (RFC 9113 §6.5.2)`);
  return undefined;
}
// The frame errors the relay raises itself, whatever app is behind it (Node's
// HTTP/2 core, under many apps, answers them GOAWAY INTERNAL_ERROR). Each ends
// the connection (GOAWAY, then close): where RFC 9113 names a stream error,
// §5.4.1 lets an endpoint end the connection instead, and the frame then never
// reaches the app as if it were valid. Stream states: stream-states.ts.
//
// | frame                                            | error                 | RFC 9113 |
// |--------------------------------------------------|-----------------------|----------|
// | larger than the receiver's SETTINGS_MAX_FRAME_SIZE | FRAME_SIZE_ERROR    | §4.2     |
// | PRIORITY on stream 0                             | PROTOCOL_ERROR        | §6.3     |
// | HEADERS or PRIORITY depending on its own stream  | PROTOCOL_ERROR        | §5.3.1   |
// | WINDOW_UPDATE with an increment of 0             | PROTOCOL_ERROR        | §6.9     |
// | a forbidden SETTINGS value                       | see invalidSetting    | §6.5.2   |
// | a WINDOW_UPDATE raising the client's connection window past 2^31-1 | FLOW_CONTROL_ERROR (client-writer.ts) | §6.9.1 |
//
// https://www.rfc-editor.org/rfc/rfc9113#section-4.2, #section-5.3.1, #section-6.3, #section-6.9

/** PRIORITY's payload, and the priority fields a HEADERS frame may lead with: a stream dependency and a weight (§6.3). */
const PRIORITY_LENGTH = 5;

/** A stream cannot depend on itself (§5.3.1): `p` holds the dependency at `at`. */
function selfDependency(streamId: number, p: Buffer, at: number): void {
  if ((p.readUInt32BE(at) & 0x7fffffff) === streamId) throw new FrameError(PROTOCOL_ERROR, `stream ${streamId} depends on itself (RFC 9113 §5.3.1)`);
}

/** A setting's value in a SETTINGS payload (the last one wins, RFC 9113 §6.5.3), or undefined. */
export function settingValue(payload: Buffer, id: number): number | undefined {
  let value: number | undefined;
  for (let i = 0; i + 6 <= payload.length; i += 6) if (payload.readUInt16BE(i) === id) value = payload.readUInt32BE(i + 2);
  return value;
}

/** Default cap on a header block (HEADERS + CONTINUATIONs): CONTINUATION floods end the connection here. */
export const DEFAULT_MAX_HEADER_BLOCK = 256 * 1024;
/** The assembly's first size: two frames of the default size (RFC 9113 §4.2), the smallest block that is split. */
const ASSEMBLY_MIN = 2 * DEFAULT_MAX_FRAME_SIZE;

const enum Phase {
  Preface,
  Header,
  /** Buffering a payload that is read whole. */
  Payload,
  /** Streaming a DATA payload: its pad length byte, data, then padding. */
  DataPadLength,
  Data,
  DataPadding,
  /** Skipping a payload nobody reads (unknown types, a PRIORITY of the wrong length). */
  Skip,
  Failed,
}

export class FrameParser {
  private phase: Phase;
  private readonly head = Buffer.alloc(FRAME_HEADER_LENGTH);
  private fill = 0;
  private type = 0;
  private flags = 0;
  private streamId = 0;
  private length = 0;
  /** Payload bytes still to come in the current phase. */
  private remaining = 0;
  private padding = 0;
  private payload: Buffer = Buffer.alloc(0);
  private payloadFill = 0;
  /** How much of the current frame's payload is read whole (a GOAWAY's: its first 8 bytes). */
  private wholeLength = 0;
  /** Payload bytes after the part read whole, skipped unread (a GOAWAY's debug data). */
  private skipAfter = 0;
  /** A header block waiting for its CONTINUATIONs. */
  private blockStream = 0;
  private blockFlags = 0;
  private blockPromised = 0;
  /** Octets of the header block so far, in `assembly` once a CONTINUATION is awaited. */
  private blockSize = 0;
  /**
   * Where a header block split over CONTINUATIONs is put together: one buffer
   * per parser, grown as blocks need (up to maxHeaderBlock) and reused, so a
   * split block costs one copy of its fragments and no allocation, where a copy of
   * each fragment and a concatenated block cost three or more (V8 collects
   * those only when its heap asks, not as their octets mount: a client sending
   * large split blocks made the relay hold hundreds of MiB of dead buffers).
   * A block needing no CONTINUATION never comes here.
   */
  private assembly: Buffer | undefined;
  /** Translate mode: the current frame's bytes go to `pass`. */
  private passing: boolean;
  /**
   * The largest frame this side may send: the receiver's SETTINGS_MAX_FRAME_SIZE
   * (RFC 9113 §4.2). A larger frame is a FRAME_SIZE_ERROR; the relay raises it as
   * the receiver's SETTINGS pass.
   */
  maxFrameSize = LARGEST_FRAME_SIZE;

  /**
   * @param expectPreface the client's direction: the connection preface comes first
   * @param maxHeaderBlock the cap on one header block's size
   * @param pass translate mode: where the bytes of everything but header blocks go
   */
  constructor(private readonly sink: FrameSink, expectPreface: boolean, private readonly maxHeaderBlock = DEFAULT_MAX_HEADER_BLOCK, private readonly pass?: (bytes: Buffer) => void) {
    this.phase = expectPreface ? Phase.Preface : Phase.Header;
    this.passing = pass !== undefined && expectPreface;
  }

  /** The length of the frame being read (for DATA: with its padding, as flow control counts it, RFC 9113 §6.9.1). */
  get frameLength(): number {
    return this.length;
  }

  /**
   * Of the DATA frame whose last part is being read (`last`), the octets that are
   * not data: its pad length and padding (RFC 9113 §6.1), which flow control
   * counts as it counts the data.
   */
  get dataPadding(): number {
    return this.flags & Flag.PADDED ? 1 + this.padding : 0;
  }

  /** Whether the bytes so far end on a frame boundary outside a header block: where a frame may be added. */
  get atBoundary(): boolean {
    return this.phase === Phase.Header && this.fill === 0 && this.blockStream === 0;
  }

  /** Reads the next piece of the stream; throws FrameError on a malformed stream, and stays failed. */
  push(chunk: Buffer): void {
    if (this.phase === Phase.Failed) return;
    try {
      this.consume(chunk);
    } catch (err) {
      this.phase = Phase.Failed;
      throw err;
    }
  }

  private consume(buf: Buffer): void {
    let i = 0;
    const n = buf.length;
    /** Where this piece's bytes not yet given to `pass` start, while `passing`. */
    let from = 0;
    while (i < n) {
      switch (this.phase) {
        case Phase.Preface: {
          const take = Math.min(CLIENT_PREFACE.length - this.fill, n - i);
          if (buf.compare(CLIENT_PREFACE, this.fill, this.fill + take, i, i + take) !== 0) throw new FrameError(PROTOCOL_ERROR, 'not the HTTP/2 connection preface');
          this.fill += take;
          i += take;
          if (this.fill === CLIENT_PREFACE.length) {
            this.fill = 0;
            this.phase = Phase.Header;
          }
          break;
        }
        case Phase.Header: {
          if (this.fill === 0 && this.pass) {
            // A frame starts: what came before it is passed before anything the sink writes for it.
            if (this.passing && i > from) this.pass(buf.subarray(from, i));
            this.passing = false;
          }
          if (this.fill === 0 && n - i >= FRAME_HEADER_LENGTH) {
            if (this.pass && (this.passing = !isHeaderBlock(buf[i + 3]!))) from = i;
            this.startFrame(buf, i);
            i += FRAME_HEADER_LENGTH;
            break;
          }
          const take = Math.min(FRAME_HEADER_LENGTH - this.fill, n - i);
          buf.copy(this.head, this.fill, i, i + take);
          this.fill += take;
          i += take;
          if (this.fill === FRAME_HEADER_LENGTH) {
            this.fill = 0;
            if (this.pass && (this.passing = !isHeaderBlock(this.head[3]!))) {
              // The header came in pieces and sits in the reused `head`: pass a copy.
              this.pass(Buffer.from(this.head));
              from = i;
            }
            this.startFrame(this.head, 0);
          }
          break;
        }
        case Phase.Payload: {
          const take = Math.min(this.remaining, n - i);
          if (this.payloadFill === 0 && take === this.wholeLength) {
            // The whole payload is in this piece: no copy.
            this.remaining = 0;
            i += take;
            this.endPayload(buf.subarray(i - take, i));
            break;
          }
          buf.copy(this.payload, this.payloadFill, i, i + take);
          this.payloadFill += take;
          this.remaining -= take;
          i += take;
          if (this.remaining === 0) this.endPayload(this.payload.subarray(0, this.payloadFill));
          break;
        }
        case Phase.DataPadLength: {
          this.padding = buf[i++]!;
          this.remaining--;
          if (this.padding > this.remaining) throw new FrameError(PROTOCOL_ERROR, 'DATA padding longer than its payload');
          this.remaining -= this.padding;
          this.phase = Phase.Data;
          if (this.remaining === 0) this.dataEnd(Buffer.alloc(0));
          break;
        }
        case Phase.Data: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          i += take;
          const part = buf.subarray(i - take, i);
          if (this.remaining === 0) this.dataEnd(part);
          else this.sink.data(this.streamId, part, this.flags, false);
          break;
        }
        case Phase.DataPadding:
        case Phase.Skip: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          i += take;
          if (this.remaining === 0) this.endSkip();
          break;
        }
        case Phase.Failed:
          return;
      }
    }
    if (this.passing && n > from) this.pass!(buf.subarray(from, n));
  }

  private startFrame(h: Buffer, at: number): void {
    const length = (h[at]! << 16) | (h[at + 1]! << 8) | h[at + 2]!;
    const type = h[at + 3]!;
    const flags = h[at + 4]!;
    const streamId = h.readUInt32BE(at + 5) & 0x7fffffff;
    this.length = length;
    this.type = type;
    this.flags = flags;
    this.streamId = streamId;
    this.remaining = length;
    if (length > this.maxFrameSize) throw new FrameError(FRAME_SIZE_ERROR, `a frame of ${length} octets, over the SETTINGS_MAX_FRAME_SIZE of ${this.maxFrameSize} (RFC 9113 §4.2)`);
    if (this.blockStream !== 0 && (type !== FrameType.CONTINUATION || streamId !== this.blockStream)) {
      throw new FrameError(PROTOCOL_ERROR, 'a header block interrupted before END_HEADERS (RFC 9113 §6.10)');
    }
    switch (type) {
      case FrameType.DATA:
        if (streamId === 0) throw new FrameError(PROTOCOL_ERROR, 'DATA on stream 0');
        if (flags & Flag.PADDED) {
          if (length === 0) throw new FrameError(FRAME_SIZE_ERROR, 'padded DATA without its pad length');
          this.phase = Phase.DataPadLength;
          return;
        }
        this.padding = 0;
        this.phase = Phase.Data;
        if (length === 0) this.dataEnd(Buffer.alloc(0));
        return;
      case FrameType.HEADERS:
      case FrameType.PUSH_PROMISE:
      case FrameType.CONTINUATION:
        if (streamId === 0) throw new FrameError(PROTOCOL_ERROR, 'header block on stream 0');
        if (type === FrameType.CONTINUATION && this.blockStream === 0) throw new FrameError(PROTOCOL_ERROR, 'CONTINUATION without a header block');
        if (this.blockSize + length > this.maxHeaderBlock) throw new FrameError(ENHANCE_YOUR_CALM, `header block larger than ${this.maxHeaderBlock} bytes`);
        return this.readWhole(length);
      case FrameType.RST_STREAM:
        if (length !== 4) throw new FrameError(FRAME_SIZE_ERROR, 'RST_STREAM length is not 4');
        return this.readWhole(length);
      case FrameType.SETTINGS:
        if (length % 6 !== 0 || ((flags & Flag.ACK) !== 0 && length !== 0)) throw new FrameError(FRAME_SIZE_ERROR, 'SETTINGS length');
        if (length > 64 * 6) throw new FrameError(ENHANCE_YOUR_CALM, 'SETTINGS frame of more than 64 settings');
        return this.readWhole(length);
      case FrameType.GOAWAY:
        if (length < 8) throw new FrameError(FRAME_SIZE_ERROR, 'GOAWAY shorter than 8 bytes');
        // Only the first 8 bytes are read; the debug data (up to 16 MiB) is relayed, never kept.
        this.skipAfter = length - 8;
        return this.readWhole(8);
      case FrameType.WINDOW_UPDATE:
        if (length !== 4) throw new FrameError(FRAME_SIZE_ERROR, 'WINDOW_UPDATE length is not 4');
        return this.readWhole(length);
      case FrameType.PING:
        if (length !== 8) throw new FrameError(FRAME_SIZE_ERROR, 'PING length is not 8');
        return this.readWhole(length);
      case FrameType.PRIORITY:
        if (streamId === 0) throw new FrameError(PROTOCOL_ERROR, 'PRIORITY on stream 0 (RFC 9113 §6.3)');
        // Of another length it is a stream error (§6.3): skipped, and the receiver resets the stream.
        if (length === PRIORITY_LENGTH) return this.readWhole(length);
        this.phase = Phase.Skip;
        if (length === 0) this.endSkip();
        return;
      default:
        this.phase = Phase.Skip;
        if (length === 0) this.endSkip();
    }
  }

  private readWhole(length: number): void {
    this.phase = Phase.Payload;
    this.payloadFill = 0;
    this.wholeLength = length;
    this.remaining = length;
    if (length === 0) return this.endPayload(Buffer.alloc(0));
    if (this.payload.length < length) this.payload = Buffer.allocUnsafe(Math.max(length, 1024));
  }

  private dataEnd(part: Buffer): void {
    if (this.padding > 0) {
      this.sink.data(this.streamId, part, this.flags, true);
      this.phase = Phase.DataPadding;
      this.remaining = this.padding;
      this.padding = 0;
      return;
    }
    this.phase = Phase.Header;
    this.sink.data(this.streamId, part, this.flags, true);
  }

  private endSkip(): void {
    this.phase = Phase.Header;
    if (this.type !== FrameType.DATA && this.type !== FrameType.GOAWAY) this.sink.other(this.type, this.flags, this.streamId, this.length);
  }

  private endPayload(p: Buffer): void {
    this.phase = Phase.Header;
    if (this.skipAfter > 0) {
      // The rest of the payload is skipped once the sink has read the part that matters.
      this.phase = Phase.Skip;
      this.remaining = this.skipAfter;
      this.skipAfter = 0;
    }
    const { type, flags, streamId } = this;
    switch (type) {
      case FrameType.HEADERS:
      case FrameType.PUSH_PROMISE: {
        let start = 0;
        let end = p.length;
        if (flags & Flag.PADDED) {
          if (p.length < 1) throw new FrameError(FRAME_SIZE_ERROR, 'padded frame without its pad length');
          end -= p[0]!;
          start = 1;
        }
        let promised = 0;
        if (type === FrameType.PUSH_PROMISE) {
          if (end - start < 4) throw new FrameError(FRAME_SIZE_ERROR, 'PUSH_PROMISE without its promised stream');
          promised = p.readUInt32BE(start) & 0x7fffffff;
          start += 4;
        } else if (flags & Flag.PRIORITY) {
          if (end - start < PRIORITY_LENGTH) throw new FrameError(FRAME_SIZE_ERROR, 'HEADERS without its priority fields');
          selfDependency(streamId, p, start);
          start += PRIORITY_LENGTH;
        }
        if (end < start) throw new FrameError(PROTOCOL_ERROR, 'padding longer than the frame');
        this.blockFlags = flags;
        this.blockPromised = promised;
        return this.blockPart(streamId, p.subarray(start, end), (flags & Flag.END_HEADERS) !== 0);
      }
      case FrameType.CONTINUATION:
        return this.blockPart(streamId, p, (flags & Flag.END_HEADERS) !== 0);
      case FrameType.RST_STREAM:
        if (streamId === 0) throw new FrameError(PROTOCOL_ERROR, 'RST_STREAM on stream 0');
        return this.sink.rstStream(streamId, p.readUInt32BE(0), p);
      case FrameType.SETTINGS:
        if (streamId !== 0) throw new FrameError(PROTOCOL_ERROR, 'SETTINGS on a stream');
        for (let i = 0; i + 6 <= p.length; i += 6) {
          const invalid = invalidSetting(p.readUInt16BE(i), p.readUInt32BE(i + 2));
          if (invalid) throw invalid;
        }
        return this.sink.settings(flags, p);
      case FrameType.GOAWAY:
        if (streamId !== 0) throw new FrameError(PROTOCOL_ERROR, 'GOAWAY on a stream');
        return this.sink.goaway(p.readUInt32BE(0) & 0x7fffffff, p.readUInt32BE(4), p);
      case FrameType.WINDOW_UPDATE: {
        const increment = p.readUInt32BE(0) & 0x7fffffff;
        if (increment === 0) throw new FrameError(PROTOCOL_ERROR, `WINDOW_UPDATE of 0 on stream ${streamId} (RFC 9113 §6.9)`);
        return this.sink.windowUpdate(streamId, increment, p);
      }
      case FrameType.PRIORITY:
        selfDependency(streamId, p, 0);
        return this.sink.other(type, flags, streamId, p.length);
      case FrameType.PING:
        if (streamId !== 0) throw new FrameError(PROTOCOL_ERROR, 'PING on a stream');
        return this.sink.ping(flags, p);
    }
  }

  private blockPart(streamId: number, fragment: Buffer, endHeaders: boolean): void {
    if (endHeaders && this.blockStream === 0) {
      this.blockSize = 0;
      return this.sink.headers(streamId, this.blockFlags, fragment, this.blockPromised);
    }
    // The fragment may live in the reused payload buffer or a read's piece: copied into the assembly.
    const at = this.blockSize;
    const size = at + fragment.length;
    let assembly = this.assembly;
    if (assembly === undefined || assembly.length < size) {
      const grown = Buffer.allocUnsafeSlow(Math.min(this.maxHeaderBlock, Math.max(size, 2 * (assembly?.length ?? 0), ASSEMBLY_MIN)));
      if (assembly !== undefined && at > 0) assembly.copy(grown, 0, 0, at);
      this.assembly = assembly = grown;
    }
    fragment.copy(assembly, at);
    this.blockSize = size;
    this.blockStream = streamId;
    if (!endHeaders) return;
    this.blockStream = 0;
    this.blockSize = 0;
    // A view of the assembly, valid until the next block: sinks read it during the call (as they read any block) and keep no part of it.
    this.sink.headers(streamId, this.blockFlags, assembly.subarray(0, size), this.blockPromised);
  }
}
