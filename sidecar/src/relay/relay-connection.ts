// One client HTTP/2 connection relayed onto one upstream connection of its
// own. Bytes pass verbatim both ways — same stream ids, SETTINGS, WINDOW_UPDATE,
// PING, so flow control is end to end and the HPACK tables on both ends stay in
// step — while a frame reader per direction observes them (relay-stream.ts).
//
// The one rule that keeps this correct: never drop or alter a frame; only add
// whole frames, at frame boundaries, outside a header block, and only frames
// that leave the HPACK tables untouched (GOAWAY, RST_STREAM, literal-only
// header blocks on a connection whose upstream never spoke).
//
// Translate mode (tracing on, to inject a traceparent) is the one exception:
// from the connection's start, every client header block is written anew toward
// the upstream with literals and static indices only (hpack-literal-encoder.ts),
// so the upstream's request table stays empty whatever the client's holds; every
// other frame still passes byte for byte.
import type http2 from 'node:http2';
import net from 'node:net';
import type tls from 'node:tls';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED, type ResetSide } from '../observe/call-record.ts';
import type { ConnectionRecord } from '../observe/observer.ts';
import type { TerminationReason } from '../observe/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../proxy/context.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST } from '../proxy/local-reply.ts';
import type { ConnectFailureLog } from '../proxy/connect-failure-log.ts';
import type { PooledSession } from '../proxy/h2-session-pool.ts';
import { fieldsFromRaw } from '../proxy/hop-by-hop.ts';
import { RETRY_BODY_LIMIT, type RetryReason } from '../proxy/upstream-retries.ts';
import { ResetBudget } from '../listen/reset-budget.ts';
import { ClientFrameBudget, STREAM_LIMIT, headerListRefusal } from './frame-budget.ts';
import { MAX_HEADER_LIST_SIZE } from '../listen/header-list-size.ts';
import { FrameError, FrameParser, type FrameSink } from './frame-parser.ts';
import { DEFAULT_MAX_FRAME_SIZE, DEFAULT_WINDOW, FRAME_HEADER_LENGTH, Flag, FrameType, Setting } from './frame-types.ts';
import { EMPTY_SETTINGS, SETTINGS_ACK, dataFrame, encodeLiteralBlock, frame, goawayFrame, headerBlockFrames, headersFrame, rstStreamFrame } from './frame-writer.ts';
import { DEFAULT_TABLE_SIZE, HpackDecoder, HpackError, type HeaderList } from './hpack-decoder.ts';
import { encodeTableless, leadingSizeUpdates } from './hpack-literal-encoder.ts';
import { RelayStream, headerBag, type Piece } from './relay-stream.ts';
import { nodeTls } from '../builtins.ts';
import { ErrorCode, NodeErrorCode, RpcscopeError, connectTimeout } from '../core/errors.ts';

/**
 * Streams relayed at once on one connection, whatever the app allows: the
 * terminating path's SETTINGS_MAX_CONCURRENT_STREAMS (listen/listener.ts). The
 * client was told the app's limit, not this one, so a stream past it is refused
 * (REFUSED_STREAM, which clients retry) rather than taken for a protocol error.
 */
export const MAX_STREAMS = 1000;
/**
 * Request header lists and held request bodies (kept while a call may be sent
 * again) one connection may have the relay keep, as nghttp2 bounds a session's
 * memory (Node's maxSessionMemory, 10 MB): a stream that would go past it is
 * refused (REFUSED_STREAM), and a body that would is no longer held (its call
 * is then not sent again).
 */
export const MAX_RETAINED_BYTES = 10 * 1024 * 1024;
/** The largest stream id (RFC 9113 §5.1.1). */
const MAX_STREAM_ID = 0x7fffffff;
/** Between the two GOAWAYs: time for streams the client sent before the first to arrive (no PING: its ACK would reach the upstream). */
const SECOND_GOAWAY_MS = 1000;
/** Client bytes held while the upstream connection is being made. */
const MAX_PENDING_BYTES = 4 * 1024 * 1024;
/** How long a connection whose upstream cannot be reached is answered locally before GOAWAY. */
const LOCAL_ANSWER_MS = 1000;
/** How long a connection the relay closes stays half-open for the client to read its last frames. */
const LOCAL_CLOSE_MS = 1000;
/**
 * A frame type no one has registered, in the experimental range (RFC 9113 §11.2,
 * 0xf0-0xff): a frame turned into it in place is ignored by its receiver (§5.5).
 */
const IGNORED_TYPE = 0xfe;
/** An answer from another connection held for the client's windows: past it, that connection waits. */
const MAX_OUT_BYTES = 64 * 1024;
/** What the relay leaves unread in the client's socket of its own frames before it waits for 'drain'. */
const CLIENT_WRITE_BOUND = 256 * 1024;
/** Connection window the relay gives the client once the upstream that kept it is gone. */
const DETACH_CREDIT = 64 * 1024;

export interface RelayOptions {
  ctx: ProxyContext;
  conn: ConnectionRecord;
  downstream: net.Socket;
  target: UpstreamUrl;
  upstreamCa: Buffer | undefined;
  nextConnId: () => number;
  connectFailures: ConnectFailureLog;
  /** Translate mode: client header blocks written anew, with the call's traceparent. */
  translate: boolean;
}

/**
 * connecting → open → closed; `local`: the upstream could not be reached and the
 * relay answers; `lost`: the upstream's connection broke under calls in flight,
 * and the relay ends them before the client's connection goes; `detached`: the
 * upstream went away gracefully (GOAWAY, then close) and the client's connection
 * goes on, its calls sent on connections of the relay's own (see `forward`).
 */
type Phase = 'connecting' | 'open' | 'local' | 'lost' | 'detached' | 'closed';

/** A frame of the relay's own waiting for the client's flow-control windows. */
interface HeldData {
  id: number;
  stream: RelayStream;
  body: Buffer;
}

export class RelayConnection {
  private readonly ctx: ProxyContext;
  private readonly conn: ConnectionRecord;
  private readonly down: net.Socket;
  private up: net.Socket | undefined;
  private readonly upConn: ConnectionRecord;
  private phase: Phase = 'connecting';
  private connectedAt: number | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly fromClient: FrameParser;
  private readonly fromUpstream: FrameParser;
  /**
   * Decodes what the client encodes (requests); its table is bounded by the
   * upstream's SETTINGS, its lists by the size the relay answers 431 past.
   */
  private readonly requestHpack = new HpackDecoder(DEFAULT_TABLE_SIZE, MAX_HEADER_LIST_SIZE);
  /** Decodes what the upstream encodes (responses); bounded by the client's SETTINGS. */
  private readonly responseHpack = new HpackDecoder(DEFAULT_TABLE_SIZE, MAX_HEADER_LIST_SIZE);
  private readonly streams = new Map<number, RelayStream>();
  private lastClientStream = 0;
  /** Client SETTINGS not acknowledged: the relay acknowledges them itself when it answers locally. */
  private clientSettings = 0;
  /**
   * Frames for the client waiting for the upstream's bytes to reach a frame
   * boundary; a header block is encoded only when written (`() => Buffer`), so
   * that it knows whether a table size update is still owed.
   */
  private toClient: (Buffer | (() => Buffer))[] = [];
  /** Frames for the upstream waiting for the client's bytes to reach a frame boundary. */
  private toUpstream: Buffer[] = [];
  /**
   * A header table size the client lowered to in SETTINGS that no upstream header
   * block has yet signalled (RFC 7541 §4.2): a block the relay writes itself must
   * then start with the update.
   */
  private owedTableSize: number | undefined;
  private clientTableLimit = DEFAULT_TABLE_SIZE;
  private goawaySent = false;
  /** Past the second GOAWAY: the connection closes once its last call ends. */
  private draining = false;
  /** After the second GOAWAY: streams past this id are refused. */
  private refuseAbove = MAX_STREAM_ID;
  /** The upstream's SETTINGS went through: the server preface the client must read first (RFC 9113 §3.4). */
  private upstreamSpoke = false;
  private readonly budget = new ResetBudget(Date.now);
  /** Floods of frames the client sends (frame-budget.ts), and the stream limit it acknowledged. */
  private readonly frameBudget = new ClientFrameBudget();
  /** Why calls are answered locally, once the upstream could not be reached. */
  private localReason = '';
  /** The first header block the relay writes itself starts with a table size update. */
  private firstLocalBlock = true;
  /** Why the relay ends calls still in flight when the connection goes, once it knows. */
  private ending: { side: ResetSide; code: number } | undefined;
  private readonly translate: boolean;
  /** The upstream's SETTINGS_MAX_FRAME_SIZE: translate mode splits the blocks it writes to fit. */
  private upstreamMaxFrame = DEFAULT_MAX_FRAME_SIZE;
  /**
   * What the client's connection window still takes (RFC 9113 §6.9.1): 65,535,
   * plus its WINDOW_UPDATEs on stream 0, less every DATA frame sent to it. DATA
   * the relay writes itself fits in it and in the stream's window.
   */
  private clientConnWindow = DEFAULT_WINDOW;
  /** The client's SETTINGS_INITIAL_WINDOW_SIZE: each new stream's window (§6.9.2). */
  private clientInitialWindow = DEFAULT_WINDOW;
  /** The relay's own DATA frames waiting for the client's windows to open. */
  private held: HeldData[] = [];
  /** The last stream id of the upstream's GOAWAY: streams above it go elsewhere. */
  private upstreamLast: number | undefined;
  /** The upstream's GOAWAY was kept from the client (see voidFrame): its connection goes on. */
  private goawayHidden = false;
  /** The pieces being read from each side, where a frame may be rewritten in place before it goes on. */
  private clientPiece: Buffer | undefined;
  /** True while the client's bytes are being parsed, before they are passed on. */
  private readingClient = false;
  private upstreamPiece: Buffer | undefined;
  /**
   * DATA the relay wrote to the client while the upstream also sends it DATA: the
   * upstream does not know it took part of the client's connection window, so
   * the client's next connection WINDOW_UPDATEs reach it smaller by as much.
   */
  private debt = 0;
  /** Streams sent on another connection whose answer has pieces waiting. */
  private readonly sending = new Map<number, RelayStream>();
  /** The data octets of the client's DATA frame being read, so far. */
  private clientFrameData = 0;
  /** Header lists and held bodies of the streams open, against MAX_RETAINED_BYTES. */
  private retained = 0;

  constructor(private readonly opts: RelayOptions) {
    this.ctx = opts.ctx;
    this.conn = opts.conn;
    this.down = opts.downstream;
    this.upConn = { id: opts.nextConnId(), side: 'upstream', httpVersion: '2', peer: opts.target.authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
    this.translate = opts.translate;
    this.fromClient = new FrameParser(this.clientSink(), true, undefined, opts.translate ? (bytes) => this.passToUpstream(bytes) : undefined);
    this.fromUpstream = new FrameParser(this.upstreamSink(), false);
    // The client's frames are held to the app's SETTINGS_MAX_FRAME_SIZE, 16 KiB until it says otherwise.
    this.fromClient.maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    // Frames go on as they come: Nagle's algorithm would hold a small answer for the client's delayed ACK.
    this.down.setNoDelay(true);
    this.down.on('data', (chunk: Buffer) => this.onClientBytes(chunk));
    this.down.on('close', () => this.onClientClose());
    this.down.on('drain', () => {
      this.up?.resume();
      if (this.sending.size > 0) this.flushOut();
    });
    this.connect();
    this.down.resume();
  }

  private connect(): void {
    const { target } = this.opts;
    const up = target.tls
      ? nodeTls().connect({ host: target.host, port: target.port, ALPNProtocols: ['h2'], servername: net.isIP(target.host) ? undefined : target.host, ca: this.opts.upstreamCa })
      : net.connect({ host: target.host, port: target.port });
    this.up = up;
    up.setNoDelay(true);
    const timer = setTimeout(() => up.destroy(connectTimeout(this.ctx.config.connectTimeoutMs)), this.ctx.config.connectTimeoutMs);
    up.once(target.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      if (target.tls && (up as tls.TLSSocket).alpnProtocol !== 'h2') {
        up.destroy(new RpcscopeError(ErrorCode.ALPN_NOT_H2, 'upstream did not agree to HTTP/2 (ALPN h2)'));
        return;
      }
      this.onUpstreamConnected();
    });
    up.on('error', (err: Error & { code?: string }) => {
      clearTimeout(timer);
      if (this.phase === 'connecting') {
        this.opts.connectFailures.report(target.authority, err);
        this.answerLocally(`upstream unavailable: ${err.code ?? err.message}`);
      }
    });
    up.on('data', (chunk: Buffer) => this.onUpstreamBytes(chunk));
    up.on('drain', () => this.down.resume());
    up.on('close', () => this.onUpstreamClose());
  }

  private onUpstreamConnected(): void {
    if (this.phase !== 'connecting') return;
    this.phase = 'open';
    this.connectedAt = now();
    this.upConn.openTime = this.connectedAt;
    this.ctx.observer.connectionOpened(this.upConn);
    const up = this.up!;
    if (this.pending.length > 0) {
      up.cork();
      for (const b of this.pending) up.write(b);
      up.uncork();
    }
    this.pending = [];
    this.pendingBytes = 0;
    this.down.resume();
  }

  private onClientBytes(chunk: Buffer): void {
    if (this.phase === 'closed') return;
    // Frame floods are cut before any of their bytes is passed on.
    const flood = this.frameBudget.read(chunk);
    if (flood) return this.cut(flood.reason, Http2Error.ENHANCE_YOUR_CALM, flood.message);
    // Translate mode writes a piece per run of frames: one syscall for the lot.
    const corked = this.translate && this.phase === 'open';
    if (corked) this.up!.cork();
    this.clientPiece = chunk;
    this.readingClient = true;
    try {
      this.fromClient.push(chunk);
    } catch (err) {
      return this.shadowFailed('client', err);
    } finally {
      this.readingClient = false;
      if (corked) this.up!.uncork();
    }
    // In translate mode the parser has passed the bytes on already.
    if (!this.translate) this.passToUpstream(chunk);
    if (this.toUpstream.length > 0 && this.fromClient.atBoundary) this.flushToUpstream();
  }

  private passToUpstream(bytes: Buffer): void {
    if (this.phase === 'open') {
      if (!this.up!.write(bytes)) this.down.pause();
    } else if (this.phase === 'connecting') {
      this.pending.push(bytes);
      this.pendingBytes += bytes.length;
      if (this.pendingBytes > MAX_PENDING_BYTES) this.down.pause();
    }
  }

  /**
   * Translate mode: the client's header block, written anew toward the upstream
   * where the client's frames were, with `traceparent` in place of the caller's.
   * Its padding and the deprecated priority fields (RFC 9113 §5.3.2) are not kept.
   * A block whose list is over the size is never written anew (literals would
   * turn each 1-octet reference into the field it names, thousands of times the
   * block): it goes nowhere, and the upstream, whose table it never touches,
   * does not hear of it. Returns whether the upstream has the block.
   */
  private rewriteBlock(id: number, flags: number, block: Buffer, list: HeaderList, traceparent: string | undefined): boolean {
    if (!this.translate) return true;
    if (this.requestHpack.overflowed) return false;
    const encoded = encodeTableless(block.subarray(0, leadingSizeUpdates(block)), list, this.requestHpack.neverIndexed, traceparent === undefined ? undefined : ['traceparent', traceparent]);
    this.passToUpstream(headerBlockFrames(id, encoded, (flags & Flag.END_STREAM) !== 0, this.upstreamMaxFrame));
    return true;
  }

  private flushToUpstream(): void {
    const frames = this.toUpstream;
    this.toUpstream = [];
    if (this.phase === 'open') for (const f of frames) this.up!.write(f);
    else if (this.phase === 'connecting') this.pending.push(...frames);
  }

  /** Adds a frame toward the upstream at the next frame boundary of the client's bytes. */
  private sendToUpstream(f: Buffer): void {
    this.toUpstream.push(f);
    // While the client's bytes are being read, the frame that led here (a HEADERS
    // the relay refuses) has not been passed on yet: onClientBytes writes the
    // added frames after the bytes, or the upstream would read a RST_STREAM for a
    // stream it never saw opened (an idle stream: PROTOCOL_ERROR, RFC 9113 §5.1).
    if (!this.readingClient && this.fromClient.atBoundary) this.flushToUpstream();
  }

  private onUpstreamBytes(chunk: Buffer): void {
    if (this.phase !== 'open') return;
    this.upstreamPiece = chunk;
    try {
      this.fromUpstream.push(chunk);
    } catch (err) {
      this.down.write(chunk);
      return this.shadowFailed('upstream', err);
    }
    if ((this.toClient.length > 0 || this.sending.size > 0) && this.canAdd()) {
      this.down.cork();
      this.down.write(chunk);
      this.flushToClient();
      this.flushOut();
      this.down.uncork();
      if (this.down.writableNeedDrain) this.up!.pause();
    } else if (!this.down.write(chunk)) this.up!.pause();
  }

  /** Writes the frames the relay added, now that the upstream's bytes sit on a frame boundary. */
  private flushToClient(): void {
    const frames = this.toClient;
    this.toClient = [];
    for (const f of frames) this.down.write(typeof f === 'function' ? f() : f);
  }

  /** Whether a frame may be added toward the client now: after the upstream's preface, at a frame boundary. */
  private canAdd(): boolean {
    return this.upstreamSpoke && this.fromUpstream.atBoundary;
  }

  /** Adds a frame toward the client at the next point where one may be added. */
  private sendToClient(f: Buffer | (() => Buffer)): void {
    this.toClient.push(f);
    if (this.canAdd()) this.flushToClient();
  }

  /**
   * The last frames toward a client whose connection the relay is closing. Before
   * the upstream spoke, the relay's own SETTINGS come first, as the server preface;
   * in the middle of an upstream frame nothing can be added, and the close alone tells.
   */
  private sendLast(frames: Buffer[]): void {
    if (this.upstreamSpoke && !this.fromUpstream.atBoundary) return;
    this.down.cork();
    if (!this.upstreamSpoke) this.down.write(EMPTY_SETTINGS);
    else this.flushToClient();
    for (const f of frames) this.down.write(f);
    this.down.uncork();
  }

  private clientSink(): FrameSink {
    return {
      headers: (id, flags, block, promised) => {
        if (promised !== 0) throw new FrameError(Http2Error.PROTOCOL_ERROR, 'PUSH_PROMISE from a client (RFC 9113 §8.4)');
        let list;
        try {
          list = this.requestHpack.decode(block);
        } catch (err) {
          throw new FrameError(Http2Error.COMPRESSION_ERROR, (err as HpackError).message);
        }
        const existing = this.streams.get(id);
        if (existing) {
          // Request trailers.
          this.rewriteBlock(id, flags, block, list, undefined);
          if (this.requestHpack.overflowed) return this.refuseTrailers(id, existing);
          if (flags & Flag.END_STREAM) this.requestComplete(id, existing);
          return;
        }
        // A stream already over: nothing to count.
        if (id <= this.lastClientStream) return void this.rewriteBlock(id, flags, block, list, undefined);
        if (id > this.refuseAbove || this.phase === 'lost') return this.refuse(id, flags, block, list);
        if ((id & 1) === 0) throw new FrameError(Http2Error.PROTOCOL_ERROR, 'client opened an even-numbered stream');
        this.lastClientStream = id;
        // Past the limit it acknowledged (RFC 9113 §5.1.2), or on a connection already cut: no new call.
        if (this.phase === 'closed' || this.frameBudget.overStreamLimit(this.streams.size)) return this.cut(STREAM_LIMIT.reason, Http2Error.PROTOCOL_ERROR, STREAM_LIMIT.message);
        // Header list over the size: 431 and GOAWAY, as when terminating (frame-budget.ts). The upstream got the
        // block (its table must stay in step) and is told to drop it once the bytes being read have passed.
        if (this.requestHpack.overflowed) {
          if (!this.translate) this.toUpstream.push(rstStreamFrame(id, Http2Error.CANCEL));
          for (const f of headerListRefusal(id, (fields) => encodeLiteralBlock(fields, this.owedTableSize))) this.sendToClient(f);
          if (!this.frameBudget.firstHeaderListRefused()) return;
          this.ctx.faults.connectionTerminated('bad_request');
          return this.goAway();
        }
        const headerBytes = this.requestHpack.listSize;
        if (this.streams.size >= MAX_STREAMS) {
          this.ctx.faults.streamRefused('stream_limit');
          return this.refuse(id, flags, block, list);
        }
        if (this.retained + headerBytes > MAX_RETAINED_BYTES) {
          this.ctx.faults.streamRefused('memory_budget');
          return this.refuse(id, flags, block, list);
        }
        const stream = new RelayStream(this.ctx, this.conn, headerBag(list), this.opts.target.authority, this.clientInitialWindow);
        this.rewriteBlock(id, flags, block, list, stream.call.traceparent);
        this.streams.set(id, stream);
        stream.headerBytes = headerBytes;
        this.retained += headerBytes;
        stream.request = list.slice();
        stream.call.enforceDeadline(() => this.expire(id, stream));
        this.upConn.calls++;
        this.upConn.active++;
        if (flags & Flag.END_STREAM) stream.requestEnded = true;
        if (this.phase === 'local') this.replyLocally(id, stream, this.localReason);
        // The upstream said it takes no stream above this one (its HEADERS still went, for its HPACK table): sent elsewhere.
        else if (this.phase === 'detached' || (this.upstreamLast !== undefined && id > this.upstreamLast)) {
          if (this.phase === 'detached' || this.goawayHidden) this.forward(id, stream);
          // The client read the GOAWAY too, and retries the stream itself.
          else this.endStream(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
        }
      },
      data: (id, chunk, flags, last) => {
        const stream = this.streams.get(id);
        // What of the frame is not data (its padding, §6.1) counts against the windows too.
        this.clientFrameData += chunk.length;
        const padding = last ? this.fromClient.frameLength - this.clientFrameData : 0;
        if (last) this.clientFrameData = 0;
        // No upstream keeps the connection's window any more: the relay does.
        const connection = this.phase === 'detached';
        if (!stream || !stream.via) {
          if (connection && chunk.length + padding > 0) this.sendToClient(windowUpdateFrame(0, chunk.length + padding));
          if (!stream) return;
        }
        if (chunk.length > 0) {
          stream.call.tap.requestData(chunk);
          if (stream.body && (stream.bodyBytes + chunk.length > RETRY_BODY_LIMIT || this.retained + chunk.length > MAX_RETAINED_BYTES)) this.dropBody(stream);
          stream.bodyBytes += chunk.length;
          if (stream.body) {
            stream.body.push(chunk);
            this.retained += chunk.length;
          }
          if (stream.via) this.writeVia(id, stream.via, chunk, connection);
        }
        // The upstream that would open this stream's window again no longer has it: the relay does.
        if (stream.via && padding > 0) this.credit(id, padding, connection);
        if (last && flags & Flag.END_STREAM) {
          stream.via?.end();
          this.requestComplete(id, stream);
        }
      },
      rstStream: (id, code) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        if (stream.via && !stream.via.closed) stream.via.close(code === Http2Error.NO_ERROR ? Http2Error.CANCEL : code);
        // Once the response is whole, a reset only stops the request side (RFC 9113 §8.1).
        if (stream.responseEnded) return this.endStream(id, stream);
        this.endStream(id, stream, { side: 'client', code });
        // A stream the client resets before its answer is what a rapid-reset flood is made of.
        if (!this.budget.spend()) this.cut('reset_flood', Http2Error.ENHANCE_YOUR_CALM, 'client connection cut: streams reset faster than the budget (rapid reset)');
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return this.frameBudget.settingsAcknowledged();
        if (this.phase === 'local') this.down.write(SETTINGS_ACK);
        else if (this.phase === 'detached') this.sendToClient(SETTINGS_ACK);
        else this.clientSettings++;
        const initial = settingValue(payload, Setting.INITIAL_WINDOW_SIZE);
        if (initial !== undefined) {
          // A new initial size moves every open stream's window by the difference (§6.9.2).
          for (const stream of this.streams.values()) stream.clientWindow += initial - this.clientInitialWindow;
          this.clientInitialWindow = initial;
          if (this.held.length > 0) this.writeHeldThenClose();
        }
        const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
        if (size === undefined) return;
        this.responseHpack.setLimit(size);
        if (size < this.clientTableLimit) this.owedTableSize = Math.min(size, this.owedTableSize ?? size);
        this.clientTableLimit = size;
      },
      goaway: (_last, code) => this.ctx.observer.goaway('client', code),
      windowUpdate: (id, increment, payload) => {
        if (id === 0) {
          this.clientConnWindow += increment;
          if (this.debt > 0 && this.phase === 'open') this.repay(increment, payload);
        } else {
          const stream = this.streams.get(id);
          if (stream) stream.clientWindow += increment;
        }
        if (this.held.length > 0) this.writeHeldThenClose();
        if (this.sending.size > 0) this.flushOut();
      },
      ping: (flags, payload) => {
        // No upstream to answer it: the relay does (RFC 9113 §6.7).
        if (this.phase === 'detached' && !(flags & Flag.ACK)) this.sendToClient(frame(FrameType.PING, Flag.ACK, 0, payload));
      },
      other: () => {},
    };
  }

  private upstreamSink(): FrameSink {
    return {
      headers: (id, flags, block, promised) => {
        let list;
        try {
          list = this.responseHpack.decode(block);
        } catch (err) {
          throw new FrameError(Http2Error.COMPRESSION_ERROR, (err as HpackError).message);
        }
        // The upstream signalled its table size: nothing is owed any more.
        if (block.length > 0 && (block[0]! & 0xe0) === 0x20) this.owedTableSize = undefined;
        // A PUSH_PROMISE's block is decoded only to keep the table in step: it is a request, not this stream's response.
        if (promised !== 0) return;
        const stream = this.streams.get(id);
        if (!stream || stream.via) return;
        // The upstream took the call: it is never sent again.
        this.dropBody(stream);
        stream.request = undefined;
        stream.responseHeaders(headerBag(list), this.connectedAt);
        if (flags & Flag.END_STREAM) this.responseComplete(id, stream);
      },
      data: (id, chunk, flags, last) => {
        if (last) this.frameBudget.dataFrameSent();
        const stream = this.streams.get(id);
        if (last) {
          const length = this.fromUpstream.frameLength;
          this.clientConnWindow -= length;
          if (stream) stream.clientWindow -= length;
        }
        if (!stream || stream.via) return;
        if (chunk.length > 0) stream.call.tap.responseData(chunk);
        if (last && flags & Flag.END_STREAM) this.responseComplete(id, stream);
      },
      rstStream: (id, code, payload) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        // The stream is answered from elsewhere: the upstream's word on it is not for the client.
        if (stream.via) return void (voidFrame(payload, this.upstreamPiece) || this.abandon(id, stream));
        // A stream refused while the client held more open than the app allows is the
        // client's doing (RFC 9113 §5.1.2): it reaches the client refused, never sent
        // elsewhere, or the limit would mean nothing.
        if (
          code === Http2Error.REFUSED_STREAM &&
          !stream.responded &&
          !stream.retried &&
          stream.body &&
          this.streams.size <= this.frameBudget.advertisedStreamLimit &&
          voidFrame(payload, this.upstreamPiece)
        ) {
          return this.retry(id, stream, this.upstreamLast !== undefined && id > this.upstreamLast ? 'goaway' : 'refused_stream');
        }
        // A response that proved its own end (trailers, a status frame in the body) is whole whatever follows.
        if (stream.responseEnded && (code === Http2Error.NO_ERROR || stream.provedEnd())) return this.endStream(id, stream);
        this.endStream(id, stream, { side: 'upstream', code });
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return;
        this.frameBudget.upstreamSettings(payload);
        this.upstreamSpoke = true;
        this.upstreamMaxFrame = settingValue(payload, Setting.MAX_FRAME_SIZE) ?? this.upstreamMaxFrame;
        // A client may send frames up to the new size once it has read it, before its ACK reaches the app.
        this.fromClient.maxFrameSize = Math.max(this.fromClient.maxFrameSize, this.upstreamMaxFrame);
        const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
        if (size !== undefined) this.requestHpack.setLimit(size);
      },
      goaway: (last, code, payload) => {
        this.ctx.observer.goaway('upstream', code);
        // A graceful GOAWAY (a restart, a max connection age) is the upstream's business: the client's
        // connection goes on, its new calls sent elsewhere. Any other code says the connection itself
        // went wrong, perhaps by the client's doing, and the client reads it: hiding it would let a
        // client shed the app's limits and go on over the relay's own connections. Where a GOAWAY
        // cannot be hidden, the client reads it and retries what it names itself.
        const hidden = code === Http2Error.NO_ERROR && voidFrame(payload, this.upstreamPiece) && (this.upstreamLast === undefined || this.goawayHidden);
        this.goawayHidden = hidden;
        this.upstreamLast = Math.min(last, this.upstreamLast ?? MAX_STREAM_ID);
        // Streams past the last one the upstream took were never worked on.
        for (const [id, stream] of this.streams) {
          if (id <= last || stream.via) continue;
          if (hidden && !stream.responded && stream.body) this.retry(id, stream, 'goaway');
          else {
            if (hidden) this.sendToClient(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
            this.endStream(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
          }
        }
      },
      windowUpdate: () => {},
      ping: () => {},
      other: () => {},
    };
  }

  /**
   * Request trailers over the header list size (listen/header-list-size.ts): too
   * late for a 431, so the stream is reset as nghttp2 resets one whose header list
   * it will not take (ENHANCE_YOUR_CALM), and the upstream is told to drop it:
   * after the block where it has it, in its place in translate mode.
   */
  private refuseTrailers(id: number, stream: RelayStream): void {
    this.ctx.log.debug('request trailers over the header list size; stream reset', { peer: this.conn.peer, streamId: id });
    this.sendToUpstream(rstStreamFrame(id, Http2Error.CANCEL));
    if (stream.via && !stream.via.closed) stream.via.close(Http2Error.CANCEL);
    this.sendToClient(rstStreamFrame(id, Http2Error.ENHANCE_YOUR_CALM));
    this.endStream(id, stream, { side: 'proxy', code: Http2Error.ENHANCE_YOUR_CALM });
  }

  /**
   * --enforce-deadlines: the call's deadline passed. The upstream is told to stop
   * (RST_STREAM CANCEL); a caller still waiting for its answer gets
   * DEADLINE_EXCEEDED from the relay (trailers-only for gRPC), one whose response
   * is under way gets RST_STREAM CANCEL. Whatever the upstream still sends for the
   * stream passes on, and the client discards it: dropping it would leak
   * connection window and, for a header block, break HPACK decoding.
   */
  private expire(id: number, stream: RelayStream): void {
    if (this.streams.get(id) !== stream || this.phase === 'closed') return;
    this.sendToUpstream(rstStreamFrame(id, Http2Error.CANCEL));
    if (stream.via && !stream.via.closed) stream.via.close(Http2Error.CANCEL);
    stream.via = undefined;
    stream.out = [];
    this.sending.delete(id);
    if (stream.responded) {
      this.sendToClient(rstStreamFrame(id, Http2Error.CANCEL));
      return this.endStream(id, stream, { side: 'proxy', code: Http2Error.CANCEL });
    }
    const { record, tap } = stream.call;
    const r = localReply(record.protocol, record.framed, stream.contentType, GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    tap.responseHeaders(r.status, r.headers);
    const fields: [string, string][] = [[':status', String(r.status)], ...Object.entries(r.headers)];
    this.sendToClient(() => headersFrame(id, encodeLiteralBlock(fields, this.owedTableSize), !r.body));
    if (r.body) {
      tap.responseData(r.body);
      this.sendToClient(dataFrame(id, r.body, true));
    }
    stream.responded = true;
    this.endStream(id, stream);
  }

  /** The upstream's END_STREAM: the call ends once the request side is over too, as the stream does. */
  private responseComplete(id: number, stream: RelayStream): void {
    stream.responseEnd();
    if (stream.requestEnded) this.endStream(id, stream);
  }

  private requestComplete(id: number, stream: RelayStream): void {
    stream.requestEnded = true;
    if (stream.responseEnded) this.endStream(id, stream);
  }

  /** A request body no longer held for sending again: its octets leave the connection's budget. */
  private dropBody(stream: RelayStream): void {
    if (!stream.body) return;
    this.retained -= stream.bodyBytes;
    stream.body = undefined;
  }

  /**
   * A new stream the relay will not take: its HEADERS still reach the upstream
   * where they must (its HPACK table follows the client's), then RST_STREAM
   * CANCEL; the client gets REFUSED_STREAM, which tells it the stream was never
   * worked on and may be sent again (RFC 9113 §8.7).
   */
  private refuse(id: number, flags: number, block: Buffer, list: HeaderList): void {
    if (this.rewriteBlock(id, flags, block, list, undefined)) this.sendToUpstream(rstStreamFrame(id, Http2Error.CANCEL));
    this.sendToClient(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
  }

  private endStream(id: number, stream: RelayStream, reset?: { side: ResetSide; code: number }): void {
    if (this.streams.get(id) !== stream) return;
    this.streams.delete(id);
    this.retained -= stream.headerBytes + (stream.body ? stream.bodyBytes : 0);
    this.upConn.active--;
    if (stream.via) {
      this.sending.delete(id);
      if (reset && !stream.via.closed) stream.via.close(Http2Error.CANCEL);
    }
    stream.call.end(reset);
    // After the bytes being read now (the call's last frames among them) have gone on.
    if (this.draining && this.streams.size === 0 && (this.phase === 'open' || this.phase === 'detached')) setImmediate(() => this.streams.size === 0 && this.close());
  }

  /**
   * The upstream cannot be reached: the client still gets HTTP/2 answers, never
   * a silent close — the relay's own SETTINGS, and UNAVAILABLE for each call it
   * sent and sends for a moment more; then GOAWAY, so that it opens a new
   * connection (which tries the upstream again) for the next ones.
   */
  private answerLocally(reason: string): void {
    if (this.phase !== 'connecting') return;
    this.phase = 'local';
    this.localReason = reason;
    this.pending = [];
    this.down.resume();
    this.down.cork();
    this.down.write(EMPTY_SETTINGS);
    for (; this.clientSettings > 0; this.clientSettings--) this.down.write(SETTINGS_ACK);
    for (const [id, stream] of this.streams) this.replyLocally(id, stream, reason);
    this.down.uncork();
    setTimeout(() => {
      if (this.phase !== 'local') return;
      this.goawaySent = true;
      this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
      this.down.write(goawayFrame(this.lastClientStream, Http2Error.NO_ERROR));
      this.phase = 'closed';
      this.lingeringClose();
    }, LOCAL_ANSWER_MS).unref();
  }

  /**
   * Half-closes toward the client and reads (and drops) what it still sends until
   * it closes too: closing a socket with unread bytes makes the kernel send RST,
   * and the client could lose the GOAWAY and answers just written.
   */
  private lingeringClose(): void {
    this.down.end();
    this.down.resume();
    setTimeout(() => this.down.destroy(), LOCAL_CLOSE_MS).unref();
  }

  private replyLocally(id: number, stream: RelayStream, reason: string): void {
    const { call } = stream;
    const { record, tap } = call;
    record.upstreamUnreachable = true;
    const r = localReply(record.protocol, record.framed, undefined, GrpcCode.UNAVAILABLE, reason);
    tap.responseHeaders(r.status, r.headers);
    const fields: [string, string][] = [[':status', String(r.status)], ...Object.entries(r.headers)];
    // No upstream ever encoded toward this client, so its table is empty: a size
    // update to 0 first honours any table size change its SETTINGS made (RFC 7541 §4.2).
    const block = encodeLiteralBlock(fields, this.firstLocalBlock ? 0 : undefined);
    this.firstLocalBlock = false;
    this.down.write(headersFrame(id, block, !r.body));
    if (r.body) {
      tap.responseData(r.body);
      this.down.write(dataFrame(id, r.body, true));
    }
    this.streams.delete(id);
    this.upConn.active--;
    call.end();
  }

  /**
   * Pays the debt (see `debt`) from the client's connection WINDOW_UPDATE being
   * read, rewritten in place before it goes on: smaller by the debt, or, when the
   * debt takes all of it, turned into a frame the upstream ignores. A frame not
   * wholly in the piece being read has partly gone on already, and the debt waits.
   */
  private repay(increment: number, payload: Buffer): void {
    if (!inPiece(payload, this.clientPiece)) return;
    if (increment > this.debt) {
      payload.writeUInt32BE(increment - this.debt, 0);
      this.debt = 0;
    } else {
      this.debt -= increment;
      voidFrame(payload, this.clientPiece);
    }
  }

  /**
   * The upstream refused the call unprocessed (a stream above its GOAWAY's last
   * stream id, or REFUSED_STREAM before any response), and the whole request is
   * held: it is sent once more, on a connection of the relay's own, as the
   * terminating path retries (proxy/upstream-retries.ts).
   */
  private retry(id: number, stream: RelayStream, reason: RetryReason): void {
    stream.retried = true;
    this.ctx.retries.retried(reason);
    this.ctx.log.debug('the upstream refused a call unprocessed; sending it again', { upstream: this.opts.target.authority, reason, streamId: id, goawayLastStreamId: this.upstreamLast });
    this.forward(id, stream);
  }

  /**
   * Sends a call on a session of the terminating path's pool (proxy/h2-session-pool.ts)
   * instead of the relayed connection: the request written anew from its decoded
   * headers and held body, the answer written back to the client on the call's
   * own stream id — header blocks as literals without indexing, so the client's
   * table stays the relayed upstream's; DATA within the client's windows. The
   * client's further DATA follows, and the relay opens the stream's window again
   * itself, as the upstream would have. A call the pool's session refuses
   * unprocessed is sent once more, if it was not already.
   */
  private forward(id: number, stream: RelayStream): void {
    const { call } = stream;
    const { tap, record } = call;
    stream.via = undefined;
    stream.out = [];
    const body = stream.body ?? [];
    const endStream = stream.requestEnded && stream.bodyBytes === 0;
    let pooled: PooledSession;
    let up: http2.ClientHttp2Stream;
    try {
      pooled = this.ctx.h2.get(this.opts.target);
      up = pooled.session.request(requestHeaders(stream.request ?? [], this.opts.target, call.traceparent), { endStream });
    } catch (err) {
      record.upstreamUnreachable = true;
      return this.answerForwarded(id, stream, `upstream unavailable: ${(err as Error).message}`);
    }
    stream.via = up;
    pooled.conn.calls++;
    pooled.conn.active++;
    if (!endStream) {
      // The held body's window credit, stream only: the relayed upstream read those frames and kept the connection's.
      for (const chunk of body) this.writeVia(id, up, chunk, false);
      if (stream.requestEnded) up.end();
    }
    let error: (Error & { code?: string }) | undefined;
    let trailers: [string, string][] | undefined;
    let endSeen = false;
    up.on('error', (err) => (error = err));
    // Node hands each header block's raw fields over as a third argument, which its type definitions leave out.
    up.on('response', (h, flags, raw?: string[]) => {
      if (stream.via !== up) return;
      this.dropBody(stream);
      stream.request = undefined;
      stream.responseHeaders(h as Record<string, string | string[]>, pooled.connectedAt);
      this.queue(id, stream, { kind: 'headers', fields: pairs(raw, h), end: (flags & Flag.END_STREAM) !== 0 });
    });
    up.on('data', (chunk: Buffer) => {
      if (stream.via !== up) return;
      tap.responseData(chunk);
      this.queue(id, stream, { kind: 'data', bytes: chunk, end: false });
      if (stream.outBytes > MAX_OUT_BYTES) up.pause();
    });
    up.on('trailers', (t, _flags, raw?: string[]) => {
      tap.responseTrailers(t);
      trailers = pairs(raw, t);
    });
    up.on('end', () => (endSeen = true));
    up.on('close', () => {
      pooled.conn.active--;
      if (stream.via !== up || this.streams.get(id) !== stream) return;
      const code = up.rstCode ?? Http2Error.INTERNAL_ERROR;
      if (endSeen && code === Http2Error.NO_ERROR) {
        record.upstreamEndTime = now();
        return this.queue(id, stream, trailers ? { kind: 'headers', fields: trailers, end: true } : { kind: 'data', bytes: EMPTY, end: true });
      }
      const reason = !stream.responded && !stream.retried && pooled.connected && stream.body ? refusal(pooled, up, code, error) : undefined;
      if (reason) return this.retry(id, stream, reason);
      if (!stream.responded && !pooled.connected) {
        record.upstreamUnreachable = true;
        return this.answerForwarded(id, stream, `upstream unavailable: ${error?.code ?? error?.message ?? 'connection failed'}`);
      }
      const refused = !stream.responded && error?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION;
      this.queue(id, stream, { kind: 'rst', code: refused ? Http2Error.REFUSED_STREAM : code, reset: { side: 'upstream', code: refused ? Http2Error.REFUSED_STREAM : code } });
    });
  }

  /**
   * Writes request body toward a call sent on a connection of the relay's own,
   * and opens the client's windows again by as much only once that connection
   * has taken it (its write callback): a client whose app reads nothing stops at
   * its windows, never filling the relay. `connection`: the connection's window
   * is the relay's to open too (detached), not the relayed upstream's.
   */
  private writeVia(id: number, via: http2.ClientHttp2Stream, chunk: Buffer, connection: boolean): void {
    // Also on an error: the octets are gone either way, and the connection's window must not shrink by them.
    via.write(chunk, () => this.credit(id, chunk.length, connection));
  }

  /** Opens the client's window for stream `id` (and the connection's, with `connection`) by `n` octets. */
  private credit(id: number, n: number, connection: boolean): void {
    if (this.phase === 'closed') return;
    if (connection) this.sendToClient(windowUpdateFrame(0, n));
    if (this.streams.has(id)) this.sendToClient(windowUpdateFrame(id, n));
  }

  /** A forwarded call the relay answers UNAVAILABLE itself: no session could take it. */
  private answerForwarded(id: number, stream: RelayStream, reason: string): void {
    const { record, tap } = stream.call;
    const r = localReply(record.protocol, record.framed, stream.contentType, GrpcCode.UNAVAILABLE, reason);
    tap.responseHeaders(r.status, r.headers);
    stream.responded = true;
    this.queue(id, stream, { kind: 'headers', fields: [[':status', String(r.status)], ...Object.entries(r.headers)], end: !r.body });
    if (r.body) {
      tap.responseData(r.body);
      this.queue(id, stream, { kind: 'data', bytes: r.body, end: true });
    }
  }

  /** A forwarded call whose client read the upstream's reset after all (it could not be hidden): it is over. */
  private abandon(id: number, stream: RelayStream): void {
    this.endStream(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
  }

  private queue(id: number, stream: RelayStream, piece: Piece): void {
    if (stream.outEnded) return;
    if (piece.kind !== 'data' ? piece.kind === 'rst' || piece.end : piece.end) stream.outEnded = true;
    if (piece.kind === 'data') stream.outBytes += piece.bytes.length;
    stream.out.push(piece);
    this.sending.set(id, stream);
    this.flushOut();
  }

  /**
   * Writes the forwarded answers' pieces the client's windows take, where a frame
   * may be added, and while the client reads: a client's windows may be as large
   * as it likes, and one that opens them and reads nothing would otherwise have
   * the relay hold the whole answer. Past CLIENT_WRITE_BOUND octets unread, the
   * rest waits for the socket's 'drain' (and the calls' own streams, paused at
   * MAX_OUT_BYTES, wait with it).
   */
  private flushOut(): void {
    if ((this.phase !== 'open' && this.phase !== 'detached') || !this.canAdd()) return;
    this.down.cork();
    this.flushToClient();
    for (const [id, stream] of this.sending) {
      let done: Piece | undefined;
      while (stream.out.length > 0 && this.down.writableLength < CLIENT_WRITE_BOUND) {
        const p = stream.out[0]!;
        if (p.kind === 'data' && p.bytes.length > 0) {
          const room = Math.min(this.clientConnWindow, stream.clientWindow, DEFAULT_MAX_FRAME_SIZE);
          if (room <= 0) break;
          const piece = p.bytes.subarray(0, room);
          const whole = piece.length === p.bytes.length;
          this.clientConnWindow -= piece.length;
          stream.clientWindow -= piece.length;
          stream.outBytes -= piece.length;
          if (this.phase === 'open') this.debt += piece.length;
          this.down.write(dataFrame(id, piece, whole && p.end));
          if (!whole) {
            p.bytes = p.bytes.subarray(room);
            continue;
          }
        } else if (p.kind === 'data') this.down.write(dataFrame(id, p.bytes, p.end));
        else if (p.kind === 'headers') this.down.write(headerBlockFrames(id, encodeLiteralBlock(p.fields, this.owedTableSize), p.end, DEFAULT_MAX_FRAME_SIZE));
        else this.down.write(rstStreamFrame(id, p.code));
        stream.out.shift();
        if (p.kind === 'rst' || p.end) done = p;
      }
      if (stream.out.length === 0) this.sending.delete(id);
      if (stream.outBytes <= MAX_OUT_BYTES / 2) stream.via?.resume();
      if (done?.kind === 'rst') this.endStream(id, stream, done.reset);
      else if (done) this.responseComplete(id, stream);
    }
    this.down.uncork();
  }

  /**
   * The upstream closed after its GOAWAY: the client's connection goes on, each
   * new call sent on a session of the relay's own. The relay now keeps what the
   * upstream kept — SETTINGS and PING acknowledged, the connection's window
   * opened again — and calls the upstream left unfinished end as in upstreamLost.
   */
  private detach(): void {
    this.phase = 'detached';
    // Reading may have waited for the upstream's socket to drain, which it never will now.
    this.down.resume();
    this.debt = 0;
    const lost = { side: 'upstream' as const, code: CONNECTION_CLOSED };
    this.down.cork();
    this.flushToClient();
    for (const [id, stream] of this.streams) if (!stream.via) this.endLost(id, stream, lost);
    // What the upstream had not opened again of the client's connection window.
    this.down.write(windowUpdateFrame(0, DETACH_CREDIT));
    this.writeHeld();
    this.down.uncork();
    this.flushOut();
  }

  /** The relay ends a misbehaving client's connection: GOAWAY with `code`, then close. */
  private cut(reason: TerminationReason, code: number, message: string): void {
    if (this.phase === 'closed') return;
    this.ctx.faults.connectionTerminated(reason);
    this.ctx.observer.goaway('proxy', code);
    this.ctx.log.warn(message, { peer: this.conn.peer });
    this.ending = { side: 'client', code: Http2Error.CANCEL };
    if (this.phase !== 'local') this.sendLast([goawayFrame(this.lastClientStream, code)]);
    this.goawaySent = true;
    this.close();
  }

  /** A direction's bytes could not be read: the peers see the same bytes and will end the connection; the relay ends it now. */
  private shadowFailed(from: 'client' | 'upstream', err: unknown): void {
    if (!(err instanceof FrameError)) {
      this.ctx.faults.internalError('forward_h2', err);
    } else {
      this.ctx.log.debug('HTTP/2 frames could not be read; connection closed', { from, error: err.message, peer: this.conn.peer });
    }
    if (from === 'client') {
      this.ctx.faults.connectionTerminated('protocol_error');
      const code = err instanceof FrameError ? err.h2Code : Http2Error.INTERNAL_ERROR;
      this.ctx.observer.goaway('proxy', code);
      if (this.phase !== 'local') this.sendLast([goawayFrame(this.lastClientStream, code)]);
      this.ending = { side: 'client', code: Http2Error.CANCEL };
    } else {
      this.ending = { side: 'upstream', code: Http2Error.PROTOCOL_ERROR };
    }
    this.close();
  }

  private onClientClose(): void {
    // The client's connection went without a reset of its own: counted apart from resets, as the terminating path does.
    this.ending ??= { side: 'client', code: CONNECTION_CLOSED };
    this.close();
  }

  private onUpstreamClose(): void {
    if (this.phase === 'connecting') return this.answerLocally('upstream closed the connection');
    if (this.phase === 'open') {
      this.upConn.closeTime = now();
      this.ctx.observer.connectionClosed(this.upConn);
    }
    if (this.phase !== 'open') return;
    // Gone as it said it would (GOAWAY): the client's connection goes on without it.
    if (this.goawayHidden && this.canAdd()) return this.detach();
    this.ending ??= { side: 'upstream', code: CONNECTION_CLOSED };
    if (this.canAdd()) return this.upstreamLost();
    // Cut in the middle of a frame (or before it spoke): nothing can be added, and the
    // calls still in flight read as resets.
    const last = [...this.streams.keys()].map((id) => rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
    if (!this.goawaySent) last.push(goawayFrame(this.lastClientStream, Http2Error.NO_ERROR));
    this.sendLast(last);
    this.phase = 'closed';
    this.finish();
    this.lingeringClose();
  }

  /**
   * The upstream's connection broke between frames (the app killed, say) with
   * calls in flight: each ends in its own protocol's words, never as the client's
   * cancel, as the terminating path ends them (proxy/forward-h2.ts) —
   *
   *   the call's state                      the client reads
   *   no response yet                       the relay's UNAVAILABLE answer (local-reply.ts)
   *   gRPC, response under way              trailers grpc-status 14 (HEADERS, END_STREAM)
   *   gRPC-Web, Connect streaming           their status frame in a last DATA (END_STREAM)
   *   REST, or a body cut inside a message  RST_STREAM(INTERNAL_ERROR)
   *   response whole, request still open   RST_STREAM(NO_ERROR) (RFC 9113 §8.1)
   *
   * — then GOAWAY, and the connection closes once every call has its ending, so
   * that the client's next call opens a new one. Header blocks are literals
   * without indexing: the client's table stays as the upstream left it.
   */
  private upstreamLost(): void {
    this.phase = 'lost';
    // Reading may have waited for the upstream's socket to drain: the client's WINDOW_UPDATEs still count.
    this.down.resume();
    const lost = this.ending!;
    this.down.cork();
    this.flushToClient();
    for (const [id, stream] of this.streams) if (!stream.via) this.endLost(id, stream, lost);
    if (!this.goawaySent) {
      this.goawaySent = true;
      this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
      this.down.write(goawayFrame(this.lastClientStream, Http2Error.NO_ERROR));
    }
    this.writeHeld();
    this.down.uncork();
    if (this.held.length === 0) return this.closeLost();
    // A client that opens no window in time gets the reset the ending could not be.
    setTimeout(() => {
      if (this.phase !== 'lost') return;
      for (const { id, stream } of this.held) {
        this.down.write(rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
        this.endStream(id, stream, lost);
      }
      this.held = [];
      this.closeLost();
    }, LOCAL_CLOSE_MS).unref();
  }

  /** Ends one call whose upstream's connection broke (see upstreamLost). */
  private endLost(id: number, stream: RelayStream, lost: { side: ResetSide; code: number }): void {
    const { call } = stream;
    const { record, tap } = call;
    if (stream.responseEnded) {
      this.down.write(rstStreamFrame(id, Http2Error.NO_ERROR));
      this.endStream(id, stream);
      return;
    }
    if (!stream.responded) {
      // Connected, then lost without an answer: perhaps no longer the server it was.
      this.ctx.protocols.forget(this.opts.target);
      const r = localReply(record.protocol, record.framed, stream.contentType, GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
      tap.responseHeaders(r.status, r.headers);
      stream.responded = true;
      this.down.write(headersFrame(id, encodeLiteralBlock([[':status', String(r.status)], ...Object.entries(r.headers)], this.owedTableSize), !r.body));
      if (r.body) this.holdData(id, stream, r.body);
      else this.endStream(id, stream, lost);
      return;
    }
    record.upstreamEndTime = now();
    const ending = tap.responseAtBoundary() ? upstreamLostEnding(record.protocol, record.framed, stream.base64, true) : undefined;
    if (ending?.trailers) {
      tap.responseTrailers(ending.trailers);
      this.down.write(headersFrame(id, encodeLiteralBlock(Object.entries(ending.trailers), this.owedTableSize), true));
      this.endStream(id, stream, lost);
    } else if (ending?.body) this.holdData(id, stream, ending.body);
    else {
      this.down.write(rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
      this.endStream(id, stream, lost);
    }
  }

  private closeLost(): void {
    this.phase = 'closed';
    this.finish();
    this.lingeringClose();
  }

  /** The relay's own last DATA (END_STREAM) of a stream, written once the client's windows take it. */
  private holdData(id: number, stream: RelayStream, body: Buffer): void {
    this.held.push({ id, stream, body });
  }

  private writeHeldThenClose(): void {
    this.writeHeld();
    if (this.phase === 'lost' && this.held.length === 0) this.closeLost();
  }

  /**
   * Writes as much of the held DATA as the client's windows take, cut into
   * frames where they are short; a stream whose last piece went has its call ended.
   */
  private writeHeld(): void {
    for (let i = 0; i < this.held.length && this.clientConnWindow > 0; ) {
      const h = this.held[i]!;
      const room = Math.min(this.clientConnWindow, h.stream.clientWindow, DEFAULT_MAX_FRAME_SIZE);
      if (room <= 0) {
        i++;
        continue;
      }
      const piece = h.body.subarray(0, room);
      const last = piece.length === h.body.length;
      this.clientConnWindow -= piece.length;
      h.stream.clientWindow -= piece.length;
      h.stream.call.tap.responseData(piece);
      this.down.write(dataFrame(h.id, piece, last));
      if (!last) {
        h.body = h.body.subarray(room);
        continue;
      }
      this.held.splice(i, 1);
      this.endStream(h.id, h.stream, this.ending);
    }
  }

  private close(): void {
    if (this.phase === 'closed') return;
    const wasOpen = this.phase === 'open';
    this.phase = 'closed';
    this.finish();
    this.lingeringClose();
    if (this.up && !this.up.destroyed) {
      this.up.destroy();
      if (wasOpen) {
        this.upConn.closeTime = now();
        this.ctx.observer.connectionClosed(this.upConn);
      }
    }
  }

  /** Ends the calls still in flight with the reason the connection went. */
  private finish(): void {
    const reset = this.ending ?? { side: 'client' as const, code: Http2Error.CANCEL };
    for (const [id, stream] of this.streams) this.endStream(id, stream, reset);
  }

  /**
   * The two-step GOAWAY (RFC 9113 §6.8), for --max-connection-age and SIGTERM.
   * The first names the highest stream id, so that streams already on their way
   * are relayed and answered (none is taken for unprocessed and sent twice); a
   * moment later the second names the last stream seen, and streams past it are
   * refused (REFUSED_STREAM, which clients retry on a new connection). Their
   * HEADERS still reach the upstream — dropping a header block would break its
   * HPACK table — followed at once by RST_STREAM CANCEL. The connection closes
   * once its calls have ended after the second step; the listener ends whatever
   * outlives the grace period or the drain timeout.
   */
  goAway(): void {
    if (this.goawaySent || this.phase === 'closed') return;
    this.goawaySent = true;
    this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
    this.sendToClient(goawayFrame(MAX_STREAM_ID, Http2Error.NO_ERROR));
    setTimeout(() => {
      if (this.phase !== 'open' && this.phase !== 'detached') return;
      this.refuseAbove = this.lastClientStream;
      this.draining = true;
      this.sendToClient(goawayFrame(this.refuseAbove, Http2Error.NO_ERROR));
      if (this.streams.size === 0) setImmediate(() => this.streams.size === 0 && this.close());
    }, SECOND_GOAWAY_MS).unref();
  }

  destroy(): void {
    this.ending ??= { side: 'proxy', code: Http2Error.CANCEL };
    this.close();
    this.down.destroy();
  }
}

/** A setting's value in a SETTINGS payload (the last one wins, RFC 9113 §6.5.3), or undefined. */
function settingValue(payload: Buffer, id: number): number | undefined {
  let value: number | undefined;
  for (let i = 0; i + 6 <= payload.length; i += 6) if (payload.readUInt16BE(i) === id) value = payload.readUInt32BE(i + 2);
  return value;
}

const EMPTY = Buffer.alloc(0);

/** Whether the frame whose payload `payload` views lies whole in `piece`, not yet gone on. */
function inPiece(payload: Buffer, piece: Buffer | undefined): piece is Buffer {
  if (!piece || payload.buffer !== piece.buffer) return false;
  return payload.byteOffset - FRAME_HEADER_LENGTH >= piece.byteOffset && payload.byteOffset + payload.length <= piece.byteOffset + piece.length;
}

/**
 * Turns the frame whose payload `payload` views, if still in `piece`, into a
 * frame of a type no one uses, which its receiver ignores (RFC 9113 §5.5): the
 * one way to take a frame out of a relayed stream without moving a byte.
 */
function voidFrame(payload: Buffer, piece: Buffer | undefined): boolean {
  if (!inPiece(payload, piece)) return false;
  const at = payload.byteOffset - FRAME_HEADER_LENGTH - piece.byteOffset;
  piece[at + 3] = IGNORED_TYPE;
  piece[at + 4] = 0;
  return true;
}

function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const p = Buffer.allocUnsafe(4);
  p.writeUInt32BE(increment & 0x7fffffff, 0);
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, p);
}

/** A decoded request (name, value, …) as node:http2's request headers, repeated fields kept apart, hop-by-hop ones left out as the terminating path does. */
function requestHeaders(list: readonly string[], target: UpstreamUrl, traceparent: string | undefined): http2.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = { ':scheme': target.tls ? 'https' : 'http' };
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (name === ':method' || name === ':path' || name === ':authority') out[name] = list[i + 1]!;
  }
  out[':authority'] ??= target.authority;
  fieldsFromRaw(list, out, true);
  if (traceparent) out.traceparent = traceparent;
  return out;
}

/** A header block's fields in order: node:http2's raw list, or its object when the list is missing. */
function pairs(raw: readonly string[] | undefined, headers: http2.IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  if (raw) {
    for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, String(v)]);
  }
  return out;
}

/**
 * Why a pool session never processed a forwarded attempt, if it did not: a
 * stream above its GOAWAY's last stream id, never sent before the GOAWAY, or a
 * REFUSED_STREAM of its own (as proxy/forward-h2.ts reads them).
 */
function refusal(session: PooledSession, up: http2.ClientHttp2Stream, code: number, err: (Error & { code?: string }) | undefined): RetryReason | undefined {
  if (err?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION) return 'goaway';
  if (code !== Http2Error.REFUSED_STREAM) return undefined;
  const last = session.goawayLastStreamId;
  return last !== undefined && up.id !== undefined && up.id > last ? 'goaway' : 'refused_stream';
}
