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
import net from 'node:net';
import tls from 'node:tls';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED, type ResetSide } from '../observe/call-record.ts';
import type { ConnectionRecord } from '../observe/observer.ts';
import type { TerminationReason } from '../observe/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../proxy/call.ts';
import type { ProxyContext } from '../proxy/context.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST } from '../proxy/local-reply.ts';
import type { ConnectFailureLog } from '../proxy/connect-failure-log.ts';
import { ResetBudget } from '../listen/reset-budget.ts';
import { FrameError, FrameParser, type FrameSink } from './frame-parser.ts';
import { DEFAULT_WINDOW, Flag, Setting } from './frame-types.ts';
import { EMPTY_SETTINGS, SETTINGS_ACK, dataFrame, encodeLiteralBlock, goawayFrame, headerBlockFrames, headersFrame, rstStreamFrame } from './frame-writer.ts';
import { DEFAULT_TABLE_SIZE, HpackDecoder, HpackError, type HeaderList } from './hpack-decoder.ts';
import { encodeTableless, leadingSizeUpdates } from './hpack-literal-encoder.ts';
import { RelayStream, headerBag } from './relay-stream.ts';

/** Streams observed at once on one connection; past it the client is cut (ENHANCE_YOUR_CALM). */
export const MAX_STREAMS = 10_000;
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
/** SETTINGS_MAX_FRAME_SIZE's initial value (RFC 9113 §6.5.2). */
const DEFAULT_MAX_FRAME = 16_384;

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
 * and the relay ends them before the client's connection goes.
 */
type Phase = 'connecting' | 'open' | 'local' | 'lost' | 'closed';

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
  /** Decodes what the client encodes (requests); its table is bounded by the upstream's SETTINGS. */
  private readonly requestHpack = new HpackDecoder();
  /** Decodes what the upstream encodes (responses); bounded by the client's SETTINGS. */
  private readonly responseHpack = new HpackDecoder();
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
  /** Why calls are answered locally, once the upstream could not be reached. */
  private localReason = '';
  /** The first header block the relay writes itself starts with a table size update. */
  private firstLocalBlock = true;
  /** Why the relay ends calls still in flight when the connection goes, once it knows. */
  private ending: { side: ResetSide; code: number } | undefined;
  private readonly translate: boolean;
  /** The upstream's SETTINGS_MAX_FRAME_SIZE: translate mode splits the blocks it writes to fit. */
  private upstreamMaxFrame = DEFAULT_MAX_FRAME;
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

  constructor(private readonly opts: RelayOptions) {
    this.ctx = opts.ctx;
    this.conn = opts.conn;
    this.down = opts.downstream;
    this.upConn = { id: opts.nextConnId(), side: 'upstream', httpVersion: '2', peer: opts.target.authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
    this.translate = opts.translate;
    this.fromClient = new FrameParser(this.clientSink(), true, undefined, opts.translate ? (bytes) => this.passToUpstream(bytes) : undefined);
    this.fromUpstream = new FrameParser(this.upstreamSink(), false);
    // Frames go on as they come: Nagle's algorithm would hold a small answer for the client's delayed ACK.
    this.down.setNoDelay(true);
    this.down.on('data', (chunk: Buffer) => this.onClientBytes(chunk));
    this.down.on('close', () => this.onClientClose());
    this.down.on('drain', () => this.up?.resume());
    this.connect();
    this.down.resume();
  }

  private connect(): void {
    const { target } = this.opts;
    const up = target.tls
      ? tls.connect({ host: target.host, port: target.port, ALPNProtocols: ['h2'], servername: net.isIP(target.host) ? undefined : target.host, ca: this.opts.upstreamCa })
      : net.connect({ host: target.host, port: target.port });
    this.up = up;
    up.setNoDelay(true);
    const timer = setTimeout(() => up.destroy(Object.assign(new Error(`connect timeout after ${this.ctx.config.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })), this.ctx.config.connectTimeoutMs);
    up.once(target.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      if (target.tls && (up as tls.TLSSocket).alpnProtocol !== 'h2') {
        up.destroy(Object.assign(new Error('upstream did not agree to HTTP/2 (ALPN h2)'), { code: 'EPROTO' }));
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
    // Translate mode writes a piece per run of frames: one syscall for the lot.
    const corked = this.translate && this.phase === 'open';
    if (corked) this.up!.cork();
    try {
      this.fromClient.push(chunk);
    } catch (err) {
      return this.shadowFailed('client', err);
    } finally {
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
   */
  private rewriteBlock(id: number, flags: number, block: Buffer, list: HeaderList, traceparent: string | undefined): void {
    if (!this.translate) return;
    const encoded = encodeTableless(block.subarray(0, leadingSizeUpdates(block)), list, this.requestHpack.neverIndexed, traceparent === undefined ? undefined : ['traceparent', traceparent]);
    this.passToUpstream(headerBlockFrames(id, encoded, (flags & Flag.END_STREAM) !== 0, this.upstreamMaxFrame));
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
    if (this.fromClient.atBoundary) this.flushToUpstream();
  }

  private onUpstreamBytes(chunk: Buffer): void {
    if (this.phase !== 'open') return;
    try {
      this.fromUpstream.push(chunk);
    } catch (err) {
      this.down.write(chunk);
      return this.shadowFailed('upstream', err);
    }
    if (this.toClient.length > 0 && this.canAdd()) {
      this.down.cork();
      this.down.write(chunk);
      this.flushToClient();
      this.down.uncork();
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
          if (flags & Flag.END_STREAM) this.requestComplete(id, existing);
          return;
        }
        // A stream already over: nothing to count.
        if (id <= this.lastClientStream) return this.rewriteBlock(id, flags, block, list, undefined);
        if (id > this.refuseAbove || this.phase === 'lost') {
          this.rewriteBlock(id, flags, block, list, undefined);
          this.sendToUpstream(rstStreamFrame(id, Http2Error.CANCEL));
          this.sendToClient(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
          return;
        }
        if ((id & 1) === 0) throw new FrameError(Http2Error.PROTOCOL_ERROR, 'client opened an even-numbered stream');
        this.lastClientStream = id;
        if (this.streams.size >= MAX_STREAMS) return this.cut('reset_flood', Http2Error.ENHANCE_YOUR_CALM, 'client connection cut: more streams open than the relay observes');
        const stream = new RelayStream(this.ctx, this.conn, headerBag(list), this.opts.target.authority, this.clientInitialWindow);
        this.rewriteBlock(id, flags, block, list, stream.call.traceparent);
        this.streams.set(id, stream);
        stream.call.enforceDeadline(() => this.expire(id, stream));
        this.upConn.calls++;
        this.upConn.active++;
        if (flags & Flag.END_STREAM) stream.requestEnded = true;
        if (this.phase === 'local') this.replyLocally(id, stream, this.localReason);
      },
      data: (id, chunk, flags, last) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        if (chunk.length > 0) stream.call.tap.requestData(chunk);
        if (last && flags & Flag.END_STREAM) this.requestComplete(id, stream);
      },
      rstStream: (id, code) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        // Once the response is whole, a reset only stops the request side (RFC 9113 §8.1).
        if (stream.responseEnded) return this.endStream(id, stream);
        this.endStream(id, stream, { side: 'client', code });
        // A stream the client resets before its answer is what a rapid-reset flood is made of.
        if (!this.budget.spend()) this.cut('reset_flood', Http2Error.ENHANCE_YOUR_CALM, 'client connection cut: streams reset faster than the budget (rapid reset)');
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return;
        if (this.phase === 'local') this.down.write(SETTINGS_ACK);
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
      windowUpdate: (id, increment) => {
        if (id === 0) this.clientConnWindow += increment;
        else {
          const stream = this.streams.get(id);
          if (stream) stream.clientWindow += increment;
        }
        if (this.held.length > 0) this.writeHeldThenClose();
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
        if (!stream) return;
        stream.responseHeaders(headerBag(list), this.connectedAt);
        if (flags & Flag.END_STREAM) this.responseComplete(id, stream);
      },
      data: (id, chunk, flags, last) => {
        const stream = this.streams.get(id);
        if (last) {
          const length = this.fromUpstream.frameLength;
          this.clientConnWindow -= length;
          if (stream) stream.clientWindow -= length;
        }
        if (!stream) return;
        if (chunk.length > 0) stream.call.tap.responseData(chunk);
        if (last && flags & Flag.END_STREAM) this.responseComplete(id, stream);
      },
      rstStream: (id, code) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        // A response that proved its own end (trailers, a status frame in the body) is whole whatever follows.
        if (stream.responseEnded && (code === Http2Error.NO_ERROR || stream.provedEnd())) return this.endStream(id, stream);
        this.endStream(id, stream, { side: 'upstream', code });
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return;
        this.upstreamSpoke = true;
        this.upstreamMaxFrame = settingValue(payload, Setting.MAX_FRAME_SIZE) ?? this.upstreamMaxFrame;
        const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
        if (size !== undefined) this.requestHpack.setLimit(size);
      },
      goaway: (last, code) => {
        this.ctx.observer.goaway('upstream', code);
        // Streams past the last one the upstream took were never worked on: the client retries them.
        for (const [id, stream] of this.streams) if (id > last) this.endStream(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
      },
      windowUpdate: () => {},
      other: () => {},
    };
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

  private endStream(id: number, stream: RelayStream, reset?: { side: ResetSide; code: number }): void {
    this.streams.delete(id);
    this.upConn.active--;
    stream.call.end(reset);
    // After the bytes being read now (the call's last frames among them) have gone on.
    if (this.draining && this.streams.size === 0 && this.phase === 'open') setImmediate(() => this.streams.size === 0 && this.close());
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
    const lost = this.ending!;
    this.down.cork();
    this.flushToClient();
    let forgotten = false;
    for (const [id, stream] of this.streams) {
      const { call } = stream;
      const { record, tap } = call;
      if (stream.responseEnded) {
        this.down.write(rstStreamFrame(id, Http2Error.NO_ERROR));
        this.endStream(id, stream);
        continue;
      }
      if (!stream.responded) {
        // Connected, then lost without an answer: perhaps no longer the server it was.
        if (!forgotten) this.ctx.protocols.forget(this.opts.target);
        forgotten = true;
        const r = localReply(record.protocol, record.framed, stream.contentType, GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
        tap.responseHeaders(r.status, r.headers);
        stream.responded = true;
        this.down.write(headersFrame(id, encodeLiteralBlock([[':status', String(r.status)], ...Object.entries(r.headers)], this.owedTableSize), !r.body));
        if (r.body) this.holdData(id, stream, r.body);
        else this.endStream(id, stream, lost);
        continue;
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
      const room = Math.min(this.clientConnWindow, h.stream.clientWindow, DEFAULT_MAX_FRAME);
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
      if (this.phase !== 'open') return;
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
