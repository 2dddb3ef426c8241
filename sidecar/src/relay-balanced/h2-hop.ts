// One HTTP/2 connection that rpcscope speaks itself, on one hop of the balanced
// relay: toward a client (server role) or toward an endpoint (client role). Unlike
// the 1:1 relay, nothing here passes through: each hop has its own stream ids,
// SETTINGS, flow-control windows and HPACK contexts (RFC 9113 §5, §6.5, §6.9;
// RFC 7541), as nghttpx and Envoy's codec keep them. What a call carries — header
// lists decoded, DATA payloads untouched — goes from one hop's stream to the
// other's (balanced-call.ts).
//
// Flow control, per hop (RFC 9113 §6.9):
//
// | window                      | who keeps it | how it opens again                                            |
// |-----------------------------|--------------|---------------------------------------------------------------|
// | send, per stream            | the peer     | its WINDOW_UPDATEs, and SETTINGS_INITIAL_WINDOW_SIZE deltas   |
// | send, connection            | the peer     | its WINDOW_UPDATEs on stream 0                                |
// | receive, per stream         | this hop     | credited once the octets left for the other hop (`consumed`)  |
// | receive, connection, client | this hop     | as per stream: one client holds at most its window in memory  |
// | receive, connection, endpoint | this hop   | on receipt: one slow client must not stall an endpoint connection every client shares; its streams' windows still bound it |
//
// Credit goes back once half a window is owed (as nghttp2 does), so a unary
// call's few octets cost no WINDOW_UPDATE at all. DATA waits per stream while a
// window is shut; what waits is bounded by the windows this hop gave.
//
// Writes: every frame queued while the event loop handles the sockets that were
// readable goes out in one write per socket once it has (`writeSoon`), or, in a
// quiet loop, as soon as the first read is parsed (`afterRead`). Frames are
// written in place into a staging buffer (hop-output.ts).
import type net from 'node:net';
import { Http2Error } from '../protocol/reset-codes.ts';
import { CLIENT_PREFACE, DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, FRAME_HEADER_LENGTH, Flag, FrameType, MAX_WINDOW, Setting } from '../h2/frame-types.ts';
import { SETTINGS_ACK, frame, goawayFrame, headerBlockFrames, rstStreamFrame, windowUpdateFrame, writeFrameHeader } from '../h2/frames.ts';
import { MAX_HEADER_LIST_SIZE } from '../h2/header-list-size.ts';
import { FrameError, FrameParser, decoded, type FrameSink } from '../relay/frame-parser.ts';
import { DEFAULT_TABLE_SIZE, HpackDecoder, type HeaderList } from '../relay/hpack-decoder.ts';
import { HpackEncoder, encodedBound } from '../relay/hpack-encoder.ts';
import { ClientStreamStates } from '../relay/stream-states.ts';
import { holdTime, releaseTime } from '../clock.ts';
import { afterRead, beforeRead, HopOutput, writeSoon } from './hop-output.ts';
import { StreamTable } from './stream-table.ts';

export type HopRole = 'server' | 'client';

/** What a hop tells the owner of one of its streams (the call). */
export interface StreamSink {
  /** A header block: response headers or trailers (client role), request trailers (server role). */
  headers(list: HeaderList, end: boolean): void;
  /** DATA, padding taken out; `end`: END_STREAM came with it. The octets are credited back once `consumed`. */
  data(chunk: Buffer, end: boolean): void;
  /** The peer reset the stream. */
  reset(code: number): void;
  /** `octets` of the DATA queued on this stream went onto the wire: the other hop may credit them back. */
  sent(octets: number): void;
}

/** What a hop tells its owner (the client connection, or the endpoint pool). */
export interface HopHost {
  /**
   * Server role: the peer opened stream `id` with `list`, a header list of
   * `listSize` octets (RFC 7541 §4.1; `overflowed`: past the size, and cut) and
   * `repeat` its block's number (HpackDecoder.repeat: a block the client sent
   * before has the same); the sink of its call, or undefined when refused (the
   * host answered it).
   */
  opened(id: number, list: HeaderList, end: boolean, overflowed: boolean, listSize: number, repeat: number): StreamSink | undefined;
  /** The peer's SETTINGS came (the first one: the connection is usable). */
  settled(): void;
  /** The peer acknowledged this hop's SETTINGS (its stream limit now binds the peer). */
  acknowledged?(): void;
  goaway(last: number, code: number): void;
  /** The connection is gone: every stream still open ends with it. */
  closed(error: Error | undefined): void;
  /** A PING ACK from the peer (keepalive). */
  pong?(payload: Buffer): void;
  /** A DATA frame went to the peer (the flood budget lets a client answer each with WINDOW_UPDATEs). */
  dataFrameSent?(): void;
  /** The peer's bytes could not be read (a connection error, or a fault of rpcscope's own): GOAWAY went, the connection closes. */
  failed?(err: unknown): void;
  /** Every piece the socket reads, before its frames are: a flood is cut here (the hop is then closed and reads nothing more). */
  screen?(chunk: Buffer): void;
}

export interface HopWindows {
  /** SETTINGS_INITIAL_WINDOW_SIZE this hop gives the peer. */
  stream: number;
  /** The connection window this hop gives the peer. */
  connection: number;
  /** Whether the connection window is credited on receipt (endpoint hops) or once consumed (client hops). */
  creditOnReceipt: boolean;
  /** SETTINGS_MAX_CONCURRENT_STREAMS this hop announces (server role). */
  maxStreams?: number;
}

/** How long an ended socket waits for the peer to close its side before it is destroyed (end). */
const LINGER_MS = 1000;

/** The queue of a stream with no DATA waiting: shared, and frozen so that nothing is ever pushed onto it. */
const NOTHING_QUEUED: Buffer[] = Object.freeze([]) as unknown as Buffer[];

export class HopStream {
  /** What the peer still lets this hop send on it. */
  sendWindow: number;
  /** What this hop still lets the peer send on it, and what it owes back. */
  recvWindow: number;
  owed = 0;
  /** DATA waiting for window (NOTHING_QUEUED until some does: most streams' DATA goes at once), then whether END_STREAM and trailers follow it. */
  queue: Buffer[] = NOTHING_QUEUED;
  queued = 0;
  endAfter = false;
  trailersAfter: HeaderList | undefined;
  localEnded = false;
  remoteEnded = false;
  reset = false;

  constructor(readonly id: number, public sink: StreamSink | undefined, sendWindow: number, recvWindow: number) {
    this.sendWindow = sendWindow;
    this.recvWindow = recvWindow;
  }
}

export class H2Hop {
  readonly streams = new StreamTable<HopStream>();
  private readonly parser: FrameParser;
  private readonly decoder = new HpackDecoder(DEFAULT_TABLE_SIZE, MAX_HEADER_LIST_SIZE);
  private readonly encoder = new HpackEncoder();
  private readonly out = new HopOutput();
  /** Whether this hop is listed to be written (hop-output.ts). */
  listed = false;
  /** Streams with DATA waiting for the connection's window. */
  private readonly blocked = new Set<HopStream>();
  private sendWindow = DEFAULT_WINDOW;
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  /** The peer's SETTINGS_MAX_CONCURRENT_STREAMS; 100 until it speaks, as grpc-go assumes. */
  peerMaxStreams = 100;
  private recvWindow: number;
  private connOwed = 0;
  /** Client role: the next stream id to open. Server role: the highest the peer opened. */
  private nextId = 1;
  lastPeerId = 0;
  settledOnce = false;
  /** A GOAWAY was sent or received: no new stream. */
  goingAway = false;
  closed = false;
  /**
   * Server role: what is known of the client's streams that are no open call —
   * the highest id it opened, those it skipped, those it ended — and the errors
   * a frame on one of them is (relay/stream-states.ts, shared with the 1:1 relay).
   */
  private readonly states: ClientStreamStates | undefined;
  /** Credits owed to the other hop, held while this socket's buffer is full (so a client that reads nothing holds nothing more). */
  private heldSent: [HopStream, number][] = [];

  constructor(
    readonly socket: net.Socket,
    readonly role: HopRole,
    private readonly host: HopHost,
    private readonly windows: HopWindows,
  ) {
    this.recvWindow = windows.connection;
    this.states = role === 'server' ? new ClientStreamStates() : undefined;
    this.parser = new FrameParser(this.sink(), role === 'server');
    this.parser.maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    socket.on('data', (chunk: Buffer) => this.read(chunk));
    socket.on('drain', () => this.drained());
    socket.on('close', () => this.gone(undefined));
    socket.on('error', (err) => this.gone(err));
  }

  /** Starts the connection: the preface (client role) and this hop's SETTINGS, then the connection window; returns the SETTINGS' payload. */
  start(): Buffer {
    const w = this.windows;
    const settings: number[] = [Setting.INITIAL_WINDOW_SIZE, w.stream, 0x6 /* MAX_HEADER_LIST_SIZE */, MAX_HEADER_LIST_SIZE];
    if (this.role === 'client') settings.push(Setting.ENABLE_PUSH, 0);
    if (w.maxStreams !== undefined) settings.push(Setting.MAX_CONCURRENT_STREAMS, w.maxStreams);
    const payload = Buffer.allocUnsafe((settings.length / 2) * 6);
    for (let i = 0; i < settings.length; i += 2) {
      payload.writeUInt16BE(settings[i]!, i * 3);
      payload.writeUInt32BE(settings[i + 1]!, i * 3 + 2);
    }
    if (this.role === 'client') this.queue(CLIENT_PREFACE);
    this.queue(frame(FrameType.SETTINGS, 0, 0, payload));
    if (w.connection > DEFAULT_WINDOW) this.queue(windowUpdateFrame(0, w.connection - DEFAULT_WINDOW));
    return payload;
  }

  /** Streams open now. */
  get active(): number {
    return this.streams.size;
  }

  /** Whether a new stream may open here (client role). */
  get hasRoom(): boolean {
    return !this.goingAway && !this.closed && this.streams.size < this.peerMaxStreams && this.nextId <= MAX_WINDOW;
  }

  /** Client role: opens a stream with `list`; its frames go once this tick ends. */
  open(list: HeaderList, end: boolean, sink: StreamSink): HopStream {
    const id = this.nextId;
    this.nextId += 2;
    const s = new HopStream(id, sink, this.peerInitialWindow, this.windows.stream);
    this.streams.set(id, s);
    this.headers(s, list, end);
    return s;
  }

  /** Server role: the sink of a stream the peer opened, once its call is made. */
  accept(id: number, sink: StreamSink): HopStream {
    const s = new HopStream(id, sink, this.peerInitialWindow, this.windows.stream);
    this.streams.set(id, s);
    return s;
  }

  /**
   * A header block on `s`, encoded now, in wire order (HPACK tables follow the
   * order blocks are sent). `list` may be a decoder's own array, reused at its
   * next block: it is copied only when it must wait.
   */
  headers(s: HopStream, list: HeaderList, end: boolean): void {
    if (s.reset || s.localEnded) return;
    if (s.queued > 0 || s.endAfter) {
      // Trailers after DATA still waiting: they go when it has.
      s.trailersAfter = list.slice();
      s.endAfter = true;
      return;
    }
    this.writeBlock(s, list, end);
  }

  /** A header block encoded straight into the output, after room for its frame header. */
  private writeBlock(s: HopStream, list: HeaderList, end: boolean): void {
    const out = this.out;
    const stage = out.reserve(FRAME_HEADER_LENGTH + encodedBound(list));
    const start = out.offset;
    const length = this.encoder.encodeInto(list, stage, start + FRAME_HEADER_LENGTH) - start - FRAME_HEADER_LENGTH;
    const max = this.peerMaxFrame;
    const endFlag = end ? Flag.END_STREAM : 0;
    if (length <= max) {
      writeFrameHeader(stage, start, length, FrameType.HEADERS, Flag.END_HEADERS | endFlag, s.id);
      out.advance(FRAME_HEADER_LENGTH + length);
    } else {
      // Past the peer's frame size (rare): HEADERS and CONTINUATIONs (RFC 9113 §6.10), made from the block encoded in the stage.
      out.put(headerBlockFrames(s.id, stage.subarray(start + FRAME_HEADER_LENGTH, start + FRAME_HEADER_LENGTH + length), end, max));
    }
    this.listDirty();
    if (end) this.endLocal(s);
  }

  /** DATA on `s`, sent as the windows allow; `end`: END_STREAM after it. */
  data(s: HopStream, chunk: Buffer, end: boolean): void {
    if (s.reset || s.localEnded) return;
    const n = chunk.length;
    if (s.queued === 0 && !s.endAfter && n > 0 && n <= s.sendWindow && n <= this.sendWindow && n <= this.peerMaxFrame) {
      // Nothing waits on the stream and the windows let it all go: one frame now, nothing queued.
      s.sendWindow -= n;
      this.sendWindow -= n;
      this.dataFrame(s, chunk, end);
      if (end) {
        s.endAfter = true;
        this.endLocal(s);
      }
      this.sentOn(s, n);
      return;
    }
    if (n > 0) {
      if (s.queue === NOTHING_QUEUED) s.queue = [];
      // A copy waits, not the read's piece: a piece of a read slab (relay/read-slab.ts) would keep the whole slab while the window is shut.
      s.queue.push(Buffer.from(chunk));
      s.queued += chunk.length;
    }
    if (end) s.endAfter = true;
    this.send(s);
  }

  /** Writes what `s` has waiting, as far as the windows go. */
  private send(s: HopStream): void {
    let sentNow = 0;
    while (s.queue.length > 0) {
      const room = Math.min(s.sendWindow, this.sendWindow, this.peerMaxFrame);
      if (room <= 0) {
        if (this.sendWindow <= 0) this.blocked.add(s);
        break;
      }
      let piece = s.queue[0]!;
      if (piece.length > room) {
        s.queue[0] = piece.subarray(room);
        piece = piece.subarray(0, room);
      } else s.queue.shift();
      s.queued -= piece.length;
      s.sendWindow -= piece.length;
      this.sendWindow -= piece.length;
      sentNow += piece.length;
      const last = s.queue.length === 0 && s.endAfter && !s.trailersAfter;
      this.dataFrame(s, piece, last);
      if (last) this.endLocal(s);
    }
    if (s.queue.length === 0) {
      this.blocked.delete(s);
      if (s.endAfter && !s.localEnded) {
        const trailers = s.trailersAfter;
        s.trailersAfter = undefined;
        if (trailers) this.writeBlock(s, trailers, true);
        else {
          this.dataFrame(s, undefined, true);
          this.endLocal(s);
        }
      }
    }
    if (sentNow > 0) this.sentOn(s, sentNow);
  }

  /** A DATA frame on `s` carrying `payload` (none: an empty one). */
  private dataFrame(s: HopStream, payload: Buffer | undefined, end: boolean): void {
    const out = this.out;
    out.frameHeader(payload === undefined ? 0 : payload.length, FrameType.DATA, end ? Flag.END_STREAM : 0, s.id);
    if (payload !== undefined) out.put(payload);
    this.listDirty();
    this.host.dataFrameSent?.();
  }

  /** `octets` of `s`'s DATA went: the other hop may credit them back, unless this socket's buffer is full. */
  private sentOn(s: HopStream, octets: number): void {
    const sink = s.sink;
    if (sink === undefined) return;
    if (this.socket.writableNeedDrain) this.heldSent.push([s, octets]);
    else sink.sent(octets);
  }

  /** Credits back `octets` of DATA received on `s`, now passed on. */
  consumed(s: HopStream, octets: number): void {
    if (this.closed || octets <= 0) return;
    if (!s.remoteEnded && !s.reset) {
      s.owed += octets;
      if (s.owed >= this.windows.stream / 2) {
        this.queue(windowUpdateFrame(s.id, s.owed));
        s.recvWindow += s.owed;
        s.owed = 0;
      }
    }
    if (!this.windows.creditOnReceipt) this.creditConnection(octets);
  }

  private creditConnection(octets: number): void {
    this.connOwed += octets;
    if (this.connOwed >= this.windows.connection / 2) {
      this.queue(windowUpdateFrame(0, this.connOwed));
      this.recvWindow += this.connOwed;
      this.connOwed = 0;
    }
  }

  /** Resets `s` with `code` (once), and forgets it. */
  reset(s: HopStream, code: number): void {
    if (s.reset || this.closed) return;
    if (!(s.localEnded && s.remoteEnded)) this.queue(rstStreamFrame(s.id, code));
    this.forget(s);
  }

  /** GOAWAY naming the last stream the peer opened that this hop works on. */
  goAway(code: number, last = this.lastPeerId): void {
    if (this.closed) return;
    this.goingAway = true;
    this.queue(goawayFrame(last, code));
  }

  /** PINGs the peer (keepalive). */
  ping(payload: Buffer): void {
    if (!this.closed) this.queue(frame(FrameType.PING, 0, 0, payload));
  }

  /**
   * Writes what is queued and ends the socket: FIN once it has gone. A peer
   * that leaves its side open (node:http2 servers do, after their own GOAWAY)
   * would keep the socket half-closed for good; it is destroyed LINGER_MS later.
   */
  end(): void {
    this.flush();
    this.socket.end();
    setTimeout(() => this.socket.destroy(), LINGER_MS).unref();
  }

  destroy(err?: Error): void {
    this.socket.destroy(err);
  }

  private endLocal(s: HopStream): void {
    s.localEnded = true;
    if (s.remoteEnded) this.forget(s);
  }

  private forget(s: HopStream): void {
    s.reset = s.reset || !(s.localEnded && s.remoteEnded);
    this.streams.delete(s.id);
    this.blocked.delete(s);
    s.queue = NOTHING_QUEUED;
    s.queued = 0;
  }

  /** A frame of its own (control frames, the preface), queued. */
  private queue(b: Buffer): void {
    this.out.put(b);
    this.listDirty();
  }

  /** Frames are queued: this hop is written once the event loop has read every readable socket. */
  private listDirty(): void {
    if (!this.listed) writeSoon(this);
  }

  /** Writes what is queued in one write (hop-output.ts). */
  flush(): void {
    this.listed = false;
    if (this.out.bytes === 0) return;
    if (this.socket.destroyed) return this.out.clear();
    // Written before the socket is up (an endpoint connecting), the frames wait in it and go once it is.
    this.out.writeTo(this.socket);
  }

  private drained(): void {
    const held = this.heldSent;
    if (held.length === 0) return;
    this.heldSent = [];
    for (const [s, n] of held) s.sink?.sent(n);
  }

  /** What the socket read: from its 'data' events, or from its `onread` (read-slab.ts), which the owner routes here. */
  read(chunk: Buffer): void {
    // One 'data' listener per socket: the screen is called from here, not as a listener of its own.
    this.host.screen?.(chunk);
    if (this.closed) return;
    beforeRead();
    // What the read brings is timed once (clock.ts); the ends it settles after its write read the clock anew.
    holdTime();
    try {
      this.parser.push(chunk);
    } catch (err) {
      const code = err instanceof FrameError ? err.h2Code : Http2Error.INTERNAL_ERROR;
      this.host.failed?.(err);
      this.fail(code, err as Error);
    } finally {
      releaseTime();
      afterRead();
    }
  }

  /** A connection error (RFC 9113 §5.4.1): GOAWAY with `code`, then close. */
  fail(code: number, err: Error): void {
    if (this.closed) return;
    this.goAway(code);
    this.end();
    this.gone(err);
  }

  private gone(err: Error | undefined): void {
    if (this.closed) return;
    this.closed = true;
    this.goingAway = true;
    this.host.closed(err);
  }

  private sink(): FrameSink {
    return {
      headers: (id, flags, block, promised) => {
        if (promised !== 0) throw new FrameError(Http2Error.PROTOCOL_ERROR, 'PUSH_PROMISE where push is off (RFC 9113 §8.4)');
        const list = decoded(this.decoder, block);
        const end = (flags & Flag.END_STREAM) !== 0;
        const s = this.streams.get(id);
        if (s) {
          if (s.remoteEnded) throw new FrameError(Http2Error.STREAM_CLOSED, `HEADERS on stream ${id} after its END_STREAM (RFC 9113 §5.1)`);
          if (end) this.remoteEnd(s);
          return s.sink?.headers(list, end);
        }
        const states = this.states;
        // Client role: the answer to a stream this hop reset already.
        if (!states) return;
        // A stream over that the client did not end: late, and ignored (§5.1 closed). Others throw (stream-states.ts).
        if (!states.opening(id)) return;
        this.lastPeerId = id;
        if (this.goingAway) return void this.queue(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
        const sink = this.host.opened(id, list, end, this.decoder.overflowed, this.decoder.listSize, this.decoder.repeat);
        const opened = this.streams.get(id);
        if (sink && opened && end) this.remoteEnd(opened);
      },
      data: (id, chunk, flags, last) => {
        const s = this.streams.get(id);
        const flow = last ? this.parser.frameLength : 0;
        if (last) {
          this.recvWindow -= flow;
          if (this.recvWindow < 0) throw new FrameError(Http2Error.FLOW_CONTROL_ERROR, 'DATA past the connection window (RFC 9113 §6.9.1)');
          if (this.windows.creditOnReceipt) this.creditConnection(flow);
        }
        if (!s) {
          this.states?.data(id, undefined);
          // A stream over: its octets still count against the connection's window, which opens again at once.
          if (last && !this.windows.creditOnReceipt) this.creditConnection(flow);
          return;
        }
        if (s.remoteEnded) throw new FrameError(Http2Error.STREAM_CLOSED, `DATA on stream ${id} after its END_STREAM (RFC 9113 §6.1)`);
        if (last) {
          s.recvWindow -= flow;
          if (s.recvWindow < 0) return void this.streamFlowError(s);
          // Padding is nobody's to pass on: credited back now.
          const padding = this.parser.dataPadding;
          if (padding > 0) this.consumed(s, padding);
        }
        const end = last && (flags & Flag.END_STREAM) !== 0;
        if (end) this.remoteEnd(s);
        if (chunk.length > 0 || end) s.sink?.data(chunk, end);
      },
      rstStream: (id, code) => {
        const s = this.streams.get(id);
        if (!s) return void this.states?.control(id, 'RST_STREAM');
        this.states?.clientEnded(id);
        s.reset = true;
        this.forget(s);
        s.sink?.reset(code);
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return this.host.acknowledged?.();
        this.applySettings(payload);
        this.queue(SETTINGS_ACK);
        if (!this.settledOnce) {
          this.settledOnce = true;
          this.host.settled();
        }
      },
      goaway: (last, code) => {
        this.goingAway = true;
        this.host.goaway(last, code);
      },
      windowUpdate: (id, increment) => {
        if (id === 0) {
          this.sendWindow += increment;
          if (this.sendWindow > MAX_WINDOW) throw new FrameError(Http2Error.FLOW_CONTROL_ERROR, 'connection window past 2^31-1 (RFC 9113 §6.9.1)');
          for (const s of [...this.blocked]) this.send(s);
          return;
        }
        const s = this.streams.get(id);
        if (!s) return void this.states?.control(id, 'WINDOW_UPDATE');
        s.sendWindow += increment;
        // A stream error (§6.9.1): the stream is reset, and its call hears of it.
        if (s.sendWindow > MAX_WINDOW) return void this.streamFlowError(s);
        if (s.queue.length > 0) this.send(s);
      },
      ping: (flags, payload) => {
        if (flags & Flag.ACK) return this.host.pong?.(payload);
        this.queue(frame(FrameType.PING, Flag.ACK, 0, payload));
      },
      other: (type, _flags, id, length) => {
        // A PRIORITY of another length is a stream error FRAME_SIZE_ERROR (§6.3); the connection ends with it (§5.4.1).
        if (type === FrameType.PRIORITY && length !== 5) throw new FrameError(Http2Error.FRAME_SIZE_ERROR, `PRIORITY of ${length} octets on stream ${id} (RFC 9113 §6.3)`);
      },
    };
  }

  private streamFlowError(s: HopStream): void {
    const sink = s.sink;
    this.reset(s, Http2Error.FLOW_CONTROL_ERROR);
    sink?.reset(Http2Error.FLOW_CONTROL_ERROR);
  }

  private remoteEnd(s: HopStream): void {
    s.remoteEnded = true;
    this.states?.clientEnded(s.id);
    if (s.localEnded) this.forget(s);
  }

  /** The peer's SETTINGS (RFC 9113 §6.5.2): what this hop may send from now on. */
  private applySettings(p: Buffer): void {
    for (let i = 0; i + 6 <= p.length; i += 6) {
      const id = p.readUInt16BE(i);
      const value = p.readUInt32BE(i + 2);
      switch (id) {
        case Setting.HEADER_TABLE_SIZE:
          this.encoder.setMaxTableSize(Math.min(value, DEFAULT_TABLE_SIZE));
          break;
        case Setting.MAX_CONCURRENT_STREAMS:
          this.peerMaxStreams = value;
          break;
        case Setting.INITIAL_WINDOW_SIZE: {
          const delta = value - this.peerInitialWindow;
          this.peerInitialWindow = value;
          for (const s of this.streams.values()) {
            s.sendWindow += delta;
            if (s.sendWindow > MAX_WINDOW) throw new FrameError(Http2Error.FLOW_CONTROL_ERROR, 'a stream window past 2^31-1 (RFC 9113 §6.9.2)');
          }
          if (delta > 0) for (const s of this.streams.values()) if (s.queue.length > 0) this.send(s);
          break;
        }
        case Setting.MAX_FRAME_SIZE:
          this.peerMaxFrame = value;
          break;
      }
    }
  }
}
