// What the relay writes toward the client besides the upstream's bytes: frames
// of its own, added only where they cannot break what the client reads of the
// upstream's (after the upstream's server preface, at a frame boundary of its
// bytes), header blocks that leave the client's HPACK table as the upstream left
// it, and DATA within the client's flow-control windows. Those windows are the
// upstream's to fill too, so the writer keeps count of them as the upstream's
// DATA passes; what the relay's own DATA takes of the connection's window while
// the upstream still keeps it is a debt, repaid from the client's next
// WINDOW_UPDATEs before they reach the upstream.
import type net from 'node:net';
import { Http2Error } from '../protocol/reset-codes.ts';
import { FrameError, type FrameParser } from './frame-parser.ts';
import { inPiece, voidFrame } from './frame-rewrite.ts';
import { PingLedger } from './ping-ledger.ts';
import { DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, FRAME_HEADER_LENGTH, Flag, FrameType, MAX_WINDOW } from '../h2/frame-types.ts';
import { EMPTY_SETTINGS, dataFrame, frame } from '../h2/frames.ts';
import { encodeLiteralBlock } from './frame-writer.ts';
import { DEFAULT_TABLE_SIZE } from './hpack-decoder.ts';
import type { RelayStream } from './relay-stream.ts';

/** What the relay leaves unread in the client's socket of its own frames before it waits for 'drain'. */
const CLIENT_WRITE_BOUND = 256 * 1024;

/** The relay's own last DATA (END_STREAM) of a stream, waiting for the client's flow-control windows. */
export interface HeldData {
  id: number;
  stream: RelayStream;
  body: Buffer;
}

/** What the writer tells the connection it writes for (relay-connection.ts). */
export interface ClientWriterHost {
  /** A call's held last DATA went whole: its call is over. */
  heldWritten(id: number, stream: RelayStream): void;
  /** The client read what waited in its socket ('drain'). */
  clientDrained(): void;
}

export class ClientWriter {
  /** The upstream's SETTINGS went through: the server preface the client must read first (RFC 9113 §3.4). */
  upstreamSpoke = false;
  /** The app's PINGs to the client awaiting the client's ACK. */
  readonly appPings = new PingLedger();
  /** The client's PINGs to the app awaiting the app's ACK. */
  readonly clientPings = new PingLedger();
  /**
   * Frames waiting for the upstream's bytes to reach a frame boundary; a header
   * block is encoded only when written (`() => Buffer`), so that it knows whether
   * a table size update is still owed.
   */
  private waiting: (Buffer | (() => Buffer))[] = [];
  /**
   * A header table size the client lowered to in SETTINGS that no upstream header
   * block has yet signalled (RFC 7541 §4.2): a block the relay writes itself must
   * then start with the update.
   */
  private owedTableSize: number | undefined;
  private tableLimit = DEFAULT_TABLE_SIZE;
  /** The first header block the relay writes on a connection no upstream spoke on starts with a table size update. */
  private firstLocalBlock = true;
  /**
   * What the client's connection window still takes (RFC 9113 §6.9.1): 65,535,
   * plus its WINDOW_UPDATEs on stream 0, less every DATA frame sent to it. DATA
   * the relay writes itself fits in it and in the stream's window.
   */
  private connWindow = DEFAULT_WINDOW;
  /** The client's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's window (§6.9.2). */
  private initialWindow = DEFAULT_WINDOW;
  /** The relay's own last DATA frames, waiting for the client's windows to open. */
  private held: HeldData[] = [];
  /**
   * DATA the relay wrote to the client while the upstream also sends it DATA: the
   * upstream does not know it took part of the client's connection window, so
   * the client's next connection WINDOW_UPDATEs reach it smaller by as much.
   */
  private debt = 0;
  /** While one read of the client is processed (`batch`), and whether the relay corked the socket in it. */
  private batching = false;
  private corked = false;

  constructor(private readonly down: net.Socket, private readonly fromUpstream: FrameParser, private readonly host: ClientWriterHost) {
    down.on('drain', () => host.clientDrained());
  }

  /** Whether a frame may be added now: after the upstream's preface, at a frame boundary of its bytes. */
  canAdd(): boolean {
    return this.upstreamSpoke && this.fromUpstream.atBoundary;
  }

  /** Frames wait for a frame boundary. */
  get waits(): boolean {
    return this.waiting.length > 0;
  }

  /** Adds a frame at the next point where one may be added. */
  send(f: Buffer | (() => Buffer)): void {
    this.waiting.push(f);
    if (this.canAdd()) this.flush();
  }

  /** Writes the frames waiting, now that the upstream's bytes sit on a frame boundary. */
  flush(): void {
    const frames = this.waiting;
    this.waiting = [];
    // Several frames go in one write (one TLS record toward a TLS client).
    const cork = frames.length > 1;
    if (cork) this.down.cork();
    for (const f of frames) this.write(typeof f === 'function' ? f() : f);
    if (cork) this.down.uncork();
  }

  /** Writes a frame (or a run of whole frames) now, where the caller knows one may be added. */
  write(f: Buffer): void {
    this.spend(f);
    this.out(f);
  }

  /** One read of the client begins: what the relay writes to the client meanwhile goes in one write, at `endBatch`. */
  batch(): void {
    this.batching = true;
  }

  endBatch(): void {
    this.batching = false;
    if (!this.corked) return;
    this.corked = false;
    this.down.uncork();
  }

  /** Writes toward the client; in a batch the socket is corked at its first write (most reads lead to none). */
  private out(f: Buffer): void {
    if (this.batching && !this.corked) {
      this.down.cork();
      this.corked = true;
    }
    this.down.write(f);
  }

  /**
   * The relay's own DATA (a local answer's body) takes from the client's connection
   * window like any: counted, so that the window the relay keeps is the client's,
   * and a WINDOW_UPDATE past 2^31-1 (connectionUpdate) is one in truth.
   */
  private spend(frames: Buffer): void {
    for (let at = 0; at + FRAME_HEADER_LENGTH <= frames.length; ) {
      const length = frames.readUIntBE(at, 3);
      if (frames[at + 3] === FrameType.DATA) this.connWindow -= length;
      at += FRAME_HEADER_LENGTH + length;
    }
  }

  cork(): void {
    this.down.cork();
  }

  uncork(): void {
    this.down.uncork();
  }

  /** Past CLIENT_WRITE_BOUND octets the client has not read: what else the relay would write waits for 'drain'. */
  get full(): boolean {
    return this.down.writableLength >= CLIENT_WRITE_BOUND;
  }

  /**
   * The last frames toward a client whose connection the relay is closing. Before
   * the upstream spoke, the relay's own SETTINGS come first, as the server preface;
   * in the middle of an upstream frame nothing can be added, and the close alone tells.
   */
  sendLast(frames: Buffer[]): void {
    if (this.upstreamSpoke && !this.fromUpstream.atBoundary) return;
    this.down.cork();
    if (!this.upstreamSpoke) this.down.write(EMPTY_SETTINGS);
    else this.flush();
    for (const f of frames) this.down.write(f);
    this.down.uncork();
  }

  /** A header block of the relay's own, led by the table size update still owed (bound once: it is handed on). */
  readonly block = (fields: readonly (readonly [string, string])[]): Buffer => encodeLiteralBlock(fields, this.owedTableSize);

  /**
   * A header block on a connection no upstream ever encoded toward: the client's
   * table is empty, so a size update to 0 first honours any table size change its
   * SETTINGS made (RFC 7541 §4.2).
   */
  localBlock(fields: readonly (readonly [string, string])[]): Buffer {
    const block = encodeLiteralBlock(fields, this.firstLocalBlock ? 0 : undefined);
    this.firstLocalBlock = false;
    return block;
  }

  /** An upstream header block passing: one that signals its table size leaves nothing owed. */
  upstreamBlock(block: Buffer): void {
    if (block.length > 0 && (block[0]! & 0xe0) === 0x20) this.owedTableSize = undefined;
  }

  /** The client's SETTINGS_HEADER_TABLE_SIZE: lowered, it is owed to the client until a block signals it. */
  tableSize(size: number): void {
    if (size < this.tableLimit) this.owedTableSize = Math.min(size, this.owedTableSize ?? size);
    this.tableLimit = size;
  }

  /** Each new stream's window: the client's SETTINGS_INITIAL_WINDOW_SIZE. */
  get streamWindow(): number {
    return this.initialWindow;
  }

  /** A new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window by the difference (§6.9.2). */
  initialWindowSize(initial: number, streams: Iterable<RelayStream>): void {
    for (const stream of streams) stream.clientWindow += initial - this.initialWindow;
    this.initialWindow = initial;
  }

  /** An upstream DATA frame of `length` octets (its padding included) passed on: out of the client's windows. */
  upstreamData(stream: RelayStream | undefined, length: number): void {
    this.connWindow -= length;
    if (stream) stream.clientWindow -= length;
  }

  /** The client's WINDOW_UPDATE on stream 0; one that takes the window past 2^31-1 ends the connection (RFC 9113 §6.9.1). */
  connectionUpdate(increment: number): void {
    if (this.connWindow + increment > MAX_WINDOW) throw new FrameError(Http2Error.FLOW_CONTROL_ERROR, 'connection window raised past 2^31-1 (RFC 9113 §6.9.1)');
    this.connWindow += increment;
  }

  /**
   * Pays the debt (see `debt`) from the client's connection WINDOW_UPDATE being
   * read, rewritten in place in `piece` before it goes on: smaller by the debt, or,
   * when the debt takes all of it, turned into a frame the upstream ignores. A
   * frame not wholly in the piece has partly gone on already, and the debt waits.
   */
  repay(increment: number, payload: Buffer, piece: Buffer | undefined): void {
    if (this.debt <= 0 || !inPiece(payload, piece)) return;
    if (increment > this.debt) {
      payload.writeUInt32BE(increment - this.debt, 0);
      this.debt = 0;
    } else {
      this.debt -= increment;
      voidFrame(payload, piece);
    }
  }

  /**
   * The upstream that kept the connection is gone: nothing is owed to it, the
   * relay keeps the window, and it acknowledges the client's PINGs the upstream
   * left unanswered (RFC 9113 §6.7), as it does every PING from now on.
   */
  takeOver(): void {
    this.debt = 0;
    for (const opaque of this.clientPings.drain()) this.write(frame(FrameType.PING, Flag.ACK, 0, opaque));
  }

  /** The client's PING: acknowledged now where no upstream keeps the connection (`answer`), else awaiting the app's ACK. */
  clientPing(opaque: Buffer, answer: boolean): void {
    if (answer) this.send(frame(FrameType.PING, Flag.ACK, 0, opaque));
    else this.clientPings.sent(opaque);
  }

  /** Octets of DATA on `stream` the client's windows take now, in one frame. */
  room(stream: RelayStream): number {
    return Math.min(this.connWindow, stream.clientWindow, DEFAULT_MAX_FRAME_SIZE);
  }

  /** Writes `piece` (within `room`) as one DATA frame; `owed`: the upstream keeps the connection's window, and is owed what it took. */
  writeData(id: number, stream: RelayStream, piece: Buffer, end: boolean, owed: boolean): void {
    this.connWindow -= piece.length;
    stream.clientWindow -= piece.length;
    if (owed) this.debt += piece.length;
    this.out(dataFrame(id, piece, end));
  }

  /** The relay's own last DATA (END_STREAM) of a stream, written once the client's windows take it. */
  hold(id: number, stream: RelayStream, body: Buffer): void {
    this.held.push({ id, stream, body });
  }

  get holding(): boolean {
    return this.held.length > 0;
  }

  /**
   * Writes as much of the held DATA as the client's windows take, cut into
   * frames where they are short; a stream whose last piece went has its call ended.
   */
  writeHeld(): void {
    for (let i = 0; i < this.held.length && this.connWindow > 0; ) {
      const h = this.held[i]!;
      const room = this.room(h.stream);
      if (room <= 0) {
        i++;
        continue;
      }
      const piece = h.body.subarray(0, room);
      const last = piece.length === h.body.length;
      h.stream.call.tap.responseData(piece);
      this.writeData(h.id, h.stream, piece, last, false);
      if (!last) {
        h.body = h.body.subarray(room);
        continue;
      }
      this.held.splice(i, 1);
      this.host.heldWritten(h.id, h.stream);
    }
  }

  /** The held DATA the client's windows never took, given up: the caller ends each call otherwise. */
  dropHeld(): HeldData[] {
    const held = this.held;
    this.held = [];
    return held;
  }
}
