// One client HTTP/2 connection relayed onto one upstream connection of its
// own. Bytes pass verbatim both ways — same stream ids, SETTINGS, WINDOW_UPDATE,
// PING, so flow control is end to end and the HPACK tables on both ends stay in
// step — while a frame reader per direction observes them (relay-stream.ts).
//
// The one rule that keeps this correct: never drop or alter a frame; only add
// whole frames, at frame boundaries, outside a header block, and only frames
// that leave the HPACK tables untouched (GOAWAY, RST_STREAM, literal-only
// header blocks on a connection whose upstream never spoke). The writers add
// frames only where it allows (client-writer.ts, upstream-writer.ts); the few
// frames rewritten in place keep every byte where it was (frame-rewrite.ts).
//
// Translate mode (tracing on, to inject a traceparent) is the one exception:
// from the connection's start, every client header block is written anew toward
// the upstream with literals and static indices only (hpack-literal-encoder.ts),
// so the upstream's request table stays empty whatever the client's holds; every
// other frame still passes byte for byte.
//
// What stays here is where the connection is (its phase) and the two frame
// sinks. Its parts own the rest: the calls open and what they keep
// (relay-calls.ts), what goes to the client and to the upstream besides each
// other's bytes (the two writers), calls sent on connections of the relay's own
// (relay-detour.ts), and the endings the relay gives calls itself
// (local-endings.ts).
import type net from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED } from '../call/call-record.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import type { TerminationReason } from '../call/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { H2Keepalive } from '../h2/h2-keepalive.ts';
import { ResetBudget } from '../h2/reset-budget.ts';
import { MAX_HEADER_LIST_SIZE } from '../h2/header-list-size.ts';
import { ClientWriter, type ClientWriterHost } from './client-writer.ts';
import { ClientFrameBudget, STREAM_LIMIT, headerListRefusal } from './frame-budget.ts';
import { FrameError, FrameParser, settingValue, type FrameSink } from './frame-parser.ts';
import { voidFrame } from './frame-rewrite.ts';
import { DEFAULT_MAX_FRAME_SIZE, Flag, FrameType, Setting } from '../h2/frame-types.ts';
import { SETTINGS_ACK, frame, goawayFrame, rstStreamFrame, windowUpdateFrame } from './frame-writer.ts';
import { DEFAULT_TABLE_SIZE, HpackDecoder, HpackError } from './hpack-decoder.ts';
import { LocalEndings } from './local-endings.ts';
import { RelayCalls, type Reset } from './relay-calls.ts';
import { NEXT, type Phase } from './relay-phase.ts';
import { RelayDetour, type DetourHost } from './relay-detour.ts';
import { RelayStream, headerBag } from './relay-stream.ts';
import { connectUpstream } from './upstream-connect.ts';
import { UpstreamWriter } from './upstream-writer.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';

/** The largest stream id (RFC 9113 §5.1.1). */
const MAX_STREAM_ID = 0x7fffffff;
/** Between the two GOAWAYs: time for streams the client sent before the first to arrive (no PING: its ACK would reach the upstream). */
const SECOND_GOAWAY_MS = 1000;
/** How long a connection whose upstream cannot be reached is answered locally before GOAWAY. */
const LOCAL_ANSWER_MS = 1000;
/** How long a connection the relay closes stays half-open for the client to read its last frames. */
const LOCAL_CLOSE_MS = 1000;
/** Connection window the relay gives the client once the upstream that kept it is gone. */
const DETACH_CREDIT = 64 * 1024;

export interface RelayOptions {
  ctx: ProxyContext;
  conn: ConnectionRecord;
  downstream: net.Socket;
  target: UpstreamUrl;
  /** Translate mode: client header blocks written anew, with the call's traceparent. */
  translate: boolean;
}

/** Its parts reach back here through their host interfaces, whose members are public for them alone. */
export class RelayConnection implements ClientWriterHost, DetourHost {
  /** Where the connection is: only `enter` moves it. */
  phase: Phase = 'connecting';
  /** The last stream id of the upstream's GOAWAY: streams above it go elsewhere. */
  upstreamLast: number | undefined;
  private readonly ctx: ProxyContext;
  private readonly conn: ConnectionRecord;
  private readonly down: net.Socket;
  private readonly up: net.Socket;
  private readonly upConn: ConnectionRecord;
  private connectedAt: number | undefined;
  private readonly fromClient: FrameParser;
  private readonly fromUpstream: FrameParser;
  /**
   * Decodes what the client encodes (requests); its table is bounded by the
   * upstream's SETTINGS, its lists by the size the relay answers 431 past.
   */
  private readonly requestHpack = new HpackDecoder(DEFAULT_TABLE_SIZE, MAX_HEADER_LIST_SIZE);
  /** Decodes what the upstream encodes (responses); bounded by the client's SETTINGS. */
  private readonly responseHpack = new HpackDecoder(DEFAULT_TABLE_SIZE, MAX_HEADER_LIST_SIZE);
  private readonly calls: RelayCalls;
  private readonly streams: Map<number, RelayStream>;
  private readonly writer: ClientWriter;
  private readonly toUpstream: UpstreamWriter;
  private readonly detour: RelayDetour;
  private readonly endings: LocalEndings;
  /** Client SETTINGS not acknowledged: the relay acknowledges them itself when it answers locally. */
  private clientSettings = 0;
  private goawaySent = false;
  /** Past the second GOAWAY: the connection closes once its last call ends. */
  private draining = false;
  /** After the second GOAWAY: streams past this id are refused. */
  private refuseAbove = MAX_STREAM_ID;
  private readonly budget = new ResetBudget(Date.now);
  /** Floods of frames the client sends (frame-budget.ts), and the stream limit it acknowledged. */
  private readonly frameBudget = new ClientFrameBudget();
  /** Why the relay ends calls still in flight when the connection goes, once it knows. */
  private ending: Reset | undefined;
  private readonly translate: boolean;
  /** The upstream's GOAWAY was kept from the client (see voidFrame): its connection goes on. */
  private goawayHidden = false;
  /** The pieces being read from each side, where a frame may be rewritten in place before it goes on (frame-rewrite.ts). */
  private clientPiece: Buffer | undefined;
  private upstreamPiece: Buffer | undefined;
  /** The data octets of the client's DATA frame being read, so far. */
  private clientFrameData = 0;
  /**
   * PINGs the client when it has sent nothing for --keepalive-interval, and ends
   * the connection when it answers nothing within --keepalive-timeout: a client
   * that vanished without FIN or RST would otherwise hold its calls open, and the
   * app's, for ever. The relay's own PINGs go at frame boundaries like any frame
   * it adds, and their ACKs stop here (the app never sent those PINGs).
   */
  private readonly keepalive: H2Keepalive;

  constructor(private readonly opts: RelayOptions) {
    const { ctx, target } = opts;
    this.ctx = ctx;
    this.conn = opts.conn;
    this.down = opts.downstream;
    this.upConn = { id: ctx.nextConnId(), side: 'upstream', httpVersion: '2', peer: target.authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
    this.translate = opts.translate;
    this.fromClient = new FrameParser(this.clientSink(), true, undefined, opts.translate ? (bytes) => this.toUpstream.pass(bytes) : undefined);
    this.fromUpstream = new FrameParser(this.upstreamSink(), false);
    // The client's frames are held to the app's SETTINGS_MAX_FRAME_SIZE, 16 KiB until it says otherwise.
    this.fromClient.maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    this.calls = new RelayCalls(this.upConn, () => this.callsEnded());
    this.streams = this.calls.streams;
    this.writer = new ClientWriter(this.down, this.fromUpstream, this);
    this.toUpstream = new UpstreamWriter(this.down, this.fromClient, this.requestHpack, opts.translate);
    this.detour = new RelayDetour(ctx, target, this.writer, this.calls, this);
    this.endings = new LocalEndings(ctx, this.conn, target, this.writer, this.toUpstream, this.calls);
    // Frames go on as they come: Nagle's algorithm would hold a small answer for the client's delayed ACK.
    this.down.setNoDelay(true);
    this.down.on('data', (chunk: Buffer) => this.onClientBytes(chunk));
    this.down.on('close', () => this.onClientClose());
    const up = (this.up = connectUpstream(target, ctx.upstreamCa, ctx.config.connectTimeoutMs, () => this.onUpstreamConnected()));
    up.on('error', (err: Error & { code?: string }) => {
      if (this.phase !== 'connecting') return;
      ctx.connectFailures.report(target.authority, err);
      this.answerLocally(`upstream unavailable: ${err.code ?? err.message}`);
    });
    up.on('data', (chunk: Buffer) => this.onUpstreamBytes(chunk));
    up.on('drain', () => this.down.resume());
    up.on('close', () => this.onUpstreamClose());
    if (ctx.config.keepaliveIntervalMs > 0) up.setKeepAlive(true, ctx.config.keepaliveIntervalMs);
    this.keepalive = new H2Keepalive(
      { intervalMs: ctx.config.keepaliveIntervalMs, timeoutMs: ctx.config.keepaliveTimeoutMs },
      {
        send: (opaque) => this.sendPing(opaque),
        bytesRead: () => this.down.bytesRead,
        timedOut: () => this.clientVanished(),
      },
    );
    this.keepalive.start();
    this.down.resume();
  }

  /** A keepalive PING toward the client, where one may be added; none while the relay answers locally or is closing. */
  private sendPing(opaque: Buffer): boolean {
    if (this.phase !== 'open' && this.phase !== 'detached') return false;
    this.writer.send(frame(FrameType.PING, 0, 0, opaque));
    return true;
  }

  /** The client answered no PING in time: gone without FIN or RST. Its calls end as a client gone, and the app's streams with the upstream connection. */
  private clientVanished(): void {
    this.ctx.faults.connectionTerminated('keepalive_timeout');
    this.ctx.faults.keepaliveTimedOut('downstream');
    this.ctx.log.info('client connection closed: no answer to PING within --keepalive-timeout', { peer: this.conn.peer, timeoutMs: this.ctx.config.keepaliveTimeoutMs });
    this.ending = { side: 'client', code: CONNECTION_CLOSED };
    this.close();
    this.down.destroy();
  }

  /** Moves to `next` if NEXT allows it from where the connection is; false, and nothing moves, otherwise. */
  private enter(next: Phase): boolean {
    if (!NEXT[this.phase].includes(next)) return false;
    this.phase = next;
    if (next === 'closed') this.keepalive.stop();
    if (next === 'open') this.toUpstream.start(this.up);
    else this.toUpstream.stop();
    return true;
  }

  private onUpstreamConnected(): void {
    if (!this.enter('open')) return;
    this.connectedAt = now();
    this.upConn.openTime = this.connectedAt;
    this.ctx.observer.connectionOpened(this.upConn);
    this.down.resume();
  }

  private onClientBytes(chunk: Buffer): void {
    if (this.phase === 'closed') return;
    // Frame floods are cut before any of their bytes is passed on.
    const flood = this.frameBudget.read(chunk);
    if (flood) return this.cut(flood.reason, Http2Error.ENHANCE_YOUR_CALM, flood.message);
    // Translate mode writes a piece per run of frames: one syscall for the lot.
    const corked = this.translate && this.phase === 'open';
    if (corked) this.up.cork();
    this.clientPiece = chunk;
    this.toUpstream.reading = true;
    try {
      this.fromClient.push(chunk);
    } catch (err) {
      return this.shadowFailed('client', err);
    } finally {
      this.toUpstream.reading = false;
      if (corked) this.up.uncork();
    }
    // In translate mode the parser has passed the bytes on already.
    if (!this.translate) this.toUpstream.pass(chunk);
    this.toUpstream.flushAtBoundary();
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
    if ((this.writer.waits || this.detour.busy) && this.writer.canAdd()) {
      this.down.cork();
      this.down.write(chunk);
      this.writer.flush();
      this.detour.flushOut();
      this.down.uncork();
      if (this.down.writableNeedDrain) this.up.pause();
    } else if (!this.down.write(chunk)) this.up.pause();
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
          // Request trailers, unless the request was over.
          if (existing.requestEnded) this.calls.states.afterEnd(id, 'HEADERS');
          this.toUpstream.rewrite(id, flags, block, list, undefined);
          if (this.requestHpack.overflowed) return this.endings.refuseTrailers(id, existing);
          if (flags & Flag.END_STREAM) this.calls.requestComplete(id, existing);
          return;
        }
        // A stream already over, whose late frames the app ignores: nothing to count (stream-states.ts).
        if (!this.calls.states.opening(id)) return void this.toUpstream.rewrite(id, flags, block, list, undefined);
        if (id > this.refuseAbove || this.phase === 'lost') return this.endings.refuse(id, flags, block, list);
        // Past the limit it acknowledged (RFC 9113 §5.1.2), or on a connection already cut: no new call.
        if (this.phase === 'closed' || this.frameBudget.overStreamLimit(this.streams.size)) return this.cut(STREAM_LIMIT.reason, Http2Error.PROTOCOL_ERROR, STREAM_LIMIT.message);
        // Header list over the size: 431 and GOAWAY, as when terminating (frame-budget.ts). The upstream got the
        // block (its table must stay in step) and is told to drop it once the bytes being read have passed.
        if (this.requestHpack.overflowed) {
          if (!this.translate) this.toUpstream.after(rstStreamFrame(id, Http2Error.CANCEL));
          for (const f of headerListRefusal(id, this.writer.block)) this.writer.send(f);
          if (!this.frameBudget.firstHeaderListRefused()) return;
          this.ctx.faults.connectionTerminated('bad_request');
          return this.goAway();
        }
        const headerBytes = this.requestHpack.listSize;
        const refusal = this.calls.refusal(headerBytes);
        if (refusal) {
          this.ctx.faults.streamRefused(refusal);
          return this.endings.refuse(id, flags, block, list);
        }
        const stream = new RelayStream(this.ctx, this.conn, headerBag(list), this.opts.target.authority, this.writer.streamWindow);
        this.toUpstream.rewrite(id, flags, block, list, stream.call.traceparent);
        this.calls.add(id, stream, list, headerBytes);
        stream.call.enforceDeadline(() => this.expire(id, stream));
        if (flags & Flag.END_STREAM) stream.requestEnded = true;
        if (this.phase === 'local') this.endings.unreachable(id, stream);
        // The upstream said it takes no stream above this one (its HEADERS still went, for its HPACK table): sent elsewhere.
        else if (this.phase === 'detached' || (this.upstreamLast !== undefined && id > this.upstreamLast)) {
          if (this.phase === 'detached' || this.goawayHidden) this.detour.forward(id, stream);
          // The client read the GOAWAY too, and retries the stream itself.
          else this.calls.end(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
        }
      },
      data: (id, chunk, flags, last) => {
        const stream = this.streams.get(id);
        this.calls.states.data(id, stream);
        // What of the frame is not data (its padding, §6.1) counts against the windows too.
        this.clientFrameData += chunk.length;
        const padding = last ? this.fromClient.frameLength - this.clientFrameData : 0;
        if (last) this.clientFrameData = 0;
        // No upstream keeps the connection's window any more: the relay does.
        const connection = this.phase === 'detached';
        if (!stream || !stream.via) {
          if (connection && chunk.length + padding > 0) this.writer.send(windowUpdateFrame(0, chunk.length + padding));
          if (!stream) return;
        }
        if (chunk.length > 0) {
          stream.call.tap.requestData(chunk);
          this.calls.requestData(stream, chunk);
          if (stream.via) this.detour.write(id, stream.via, chunk, connection);
        }
        // The upstream that would open this stream's window again no longer has it: the relay does.
        if (stream.via && padding > 0) this.detour.credit(id, padding, connection);
        if (last && flags & Flag.END_STREAM) {
          stream.via?.end();
          this.calls.requestComplete(id, stream);
        }
      },
      rstStream: (id, code) => {
        const stream = this.streams.get(id);
        if (!stream) return this.calls.states.control(id, 'RST_STREAM');
        if (stream.via && !stream.via.closed) stream.via.close(code === Http2Error.NO_ERROR ? Http2Error.CANCEL : code);
        // Once the response is whole, a reset only stops the request side (RFC 9113 §8.1).
        if (stream.responseEnded) return this.calls.end(id, stream);
        this.calls.end(id, stream, { side: 'client', code });
        // A stream the client resets before its answer is what a rapid-reset flood is made of.
        if (!this.budget.spend()) this.cut('reset_flood', Http2Error.ENHANCE_YOUR_CALM, 'client connection cut: streams reset faster than the budget (rapid reset)');
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return this.frameBudget.settingsAcknowledged();
        if (this.phase === 'local') this.writer.write(SETTINGS_ACK);
        else if (this.phase === 'detached') this.writer.send(SETTINGS_ACK);
        else this.clientSettings++;
        const initial = settingValue(payload, Setting.INITIAL_WINDOW_SIZE);
        if (initial !== undefined) {
          this.writer.initialWindowSize(initial, this.streams.values());
          if (this.writer.holding) this.writeHeldThenClose();
        }
        const size = settingValue(payload, Setting.HEADER_TABLE_SIZE);
        if (size === undefined) return;
        this.responseHpack.setLimit(size);
        this.writer.tableSize(size);
      },
      goaway: (_last, code) => this.ctx.observer.goaway('client', code),
      windowUpdate: (id, increment, payload) => {
        if (id === 0) {
          this.writer.connectionUpdate(increment);
          // What the relay's own DATA took of the window is the upstream's to hear of only while it keeps the window.
          if (this.phase === 'open') this.writer.repay(increment, payload, this.clientPiece);
        } else {
          const stream = this.streams.get(id);
          if (stream) stream.clientWindow += increment;
          else this.calls.states.control(id, 'WINDOW_UPDATE');
        }
        if (this.writer.holding) this.writeHeldThenClose();
        if (this.detour.busy) this.detour.flushOut();
      },
      ping: (flags, payload) => {
        // The ACK of the relay's own keepalive PING, or of none: the upstream never sent that PING, so the ACK is taken
        // out (a frame of an unused type in its place; one split across reads goes on) and ignored (§6.7, ping-ledger.ts).
        if (flags & Flag.ACK && (this.keepalive.acked(payload) || !this.writer.appPings.acked(payload))) return void voidFrame(payload, this.clientPiece);
        if (!(flags & Flag.ACK)) this.writer.clientPing(payload, this.phase === 'detached');
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
        this.writer.upstreamBlock(block);
        // A PUSH_PROMISE's block is decoded only to keep the table in step: it is a request, not this stream's response.
        if (promised !== 0) return;
        const stream = this.streams.get(id);
        if (!stream || stream.via) return;
        // The upstream took the call: it is never sent again.
        this.calls.dropBody(stream);
        stream.request = undefined;
        stream.responseHeaders(headerBag(list), this.connectedAt);
        if (flags & Flag.END_STREAM) this.calls.responseComplete(id, stream);
      },
      data: (id, chunk, flags, last) => {
        if (last) this.frameBudget.dataFrameSent();
        const stream = this.streams.get(id);
        if (last) this.writer.upstreamData(stream, this.fromUpstream.frameLength);
        if (!stream || stream.via) return;
        if (chunk.length > 0) stream.call.tap.responseData(chunk);
        if (last && flags & Flag.END_STREAM) this.calls.responseComplete(id, stream);
      },
      rstStream: (id, code, payload) => {
        const stream = this.streams.get(id);
        if (!stream) return;
        // The stream is answered from elsewhere: the upstream's word on it is not for the client.
        if (stream.via) return void (voidFrame(payload, this.upstreamPiece) || this.detour.abandon(id, stream));
        // A stream refused while the client held more open than the app allows is the
        // client's doing (RFC 9113 §5.1.2): it reaches the client refused, never sent
        // elsewhere, or the limit would mean nothing.
        if (
          code === Http2Error.REFUSED_STREAM &&
          !stream.responded &&
          !stream.detour?.retried &&
          stream.body &&
          this.streams.size <= this.frameBudget.advertisedStreamLimit &&
          voidFrame(payload, this.upstreamPiece)
        ) {
          return this.detour.retry(id, stream, this.upstreamLast !== undefined && id > this.upstreamLast ? 'goaway' : 'refused_stream');
        }
        // A response that proved its own end (trailers, a status frame in the body) is whole whatever follows.
        if (stream.responseEnded && (code === Http2Error.NO_ERROR || stream.provedEnd())) return this.calls.end(id, stream);
        this.calls.end(id, stream, { side: 'upstream', code });
      },
      settings: (flags, payload) => {
        if (flags & Flag.ACK) return;
        this.frameBudget.upstreamSettings(payload);
        this.writer.upstreamSpoke = true;
        const maxFrame = (this.toUpstream.maxFrame = settingValue(payload, Setting.MAX_FRAME_SIZE) ?? this.toUpstream.maxFrame);
        // A client may send frames up to the new size once it has read it, before its ACK reaches the app.
        this.fromClient.maxFrameSize = Math.max(this.fromClient.maxFrameSize, maxFrame);
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
          if (hidden && !stream.responded && stream.body) this.detour.retry(id, stream, 'goaway');
          else {
            if (hidden) this.writer.send(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
            this.calls.end(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
          }
        }
      },
      windowUpdate: () => {},
      ping: (flags, payload) => void (flags & Flag.ACK ? this.writer.clientPings.acked(payload) : this.writer.appPings.sent(payload)),
      other: () => {},
    };
  }

  /** --enforce-deadlines: the call's deadline passed (LocalEndings.deadline). */
  private expire(id: number, stream: RelayStream): void {
    if (this.streams.get(id) !== stream || this.phase === 'closed') return;
    this.endings.deadline(id, stream);
  }

  /** The last call open ended: past the second GOAWAY, the connection closes once the bytes being read now (the call's last frames among them) have gone on. */
  private callsEnded(): void {
    if (this.draining && (this.phase === 'open' || this.phase === 'detached')) setImmediate(() => this.streams.size === 0 && this.close());
  }

  /** A call's held last DATA went (ClientWriter): it ends as the connection's calls do. */
  heldWritten(id: number, stream: RelayStream): void {
    this.calls.end(id, stream, this.ending);
  }

  /** The client read what waited in its socket: the upstream's bytes, and the answers sent elsewhere, go on. */
  clientDrained(): void {
    this.up.resume();
    if (this.detour.busy) this.detour.flushOut();
  }

  /**
   * The upstream cannot be reached: the client still gets HTTP/2 answers for a
   * moment (LocalEndings.unreachableAll), then GOAWAY, so that it opens a new
   * connection (which tries the upstream again) for the next calls.
   */
  private answerLocally(reason: string): void {
    if (!this.enter('local')) return;
    this.down.resume();
    this.endings.unreachableAll(this.clientSettings, reason);
    this.clientSettings = 0;
    setTimeout(() => {
      if (this.phase !== 'local') return;
      this.goawaySent = true;
      this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
      this.writer.write(goawayFrame(this.calls.states.last, Http2Error.NO_ERROR));
      this.enter('closed');
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

  /**
   * The upstream closed after its GOAWAY: the client's connection goes on, each
   * new call sent on a session of the relay's own. The relay now keeps what the
   * upstream kept — SETTINGS and PING acknowledged, the connection's window
   * opened again — and calls the upstream left unfinished end as in upstreamLost.
   */
  private detach(): void {
    this.enter('detached');
    // Reading may have waited for the upstream's socket to drain, which it never will now.
    this.down.resume();
    this.writer.takeOver();
    const lost = { side: 'upstream' as const, code: CONNECTION_CLOSED };
    this.writer.cork();
    this.writer.flush();
    for (const [id, stream] of this.streams) if (!stream.via) this.endings.lost(id, stream, lost);
    // What the upstream had not opened again of the client's connection window.
    this.writer.write(windowUpdateFrame(0, DETACH_CREDIT));
    this.writer.writeHeld();
    this.writer.uncork();
    this.detour.flushOut();
  }

  /** The relay ends a misbehaving client's connection: GOAWAY with `code`, then close. */
  private cut(reason: TerminationReason, code: number, message: string): void {
    if (this.phase === 'closed') return;
    this.ctx.faults.connectionTerminated(reason);
    this.ctx.observer.goaway('proxy', code);
    this.ctx.log.warn(message, { peer: this.conn.peer });
    this.ending = { side: 'client', code: Http2Error.CANCEL };
    if (this.phase !== 'local') this.writer.sendLast([goawayFrame(this.calls.states.last, code)]);
    this.goawaySent = true;
    this.close();
  }

  /** A direction's bytes could not be read: the peers see the same bytes and will end the connection; the relay ends it now. */
  private shadowFailed(from: 'client' | 'upstream', err: unknown): void {
    const frameError = hasCode(err, ErrorCode.H2_FRAME) ? (err as FrameError) : undefined;
    if (frameError === undefined) {
      this.ctx.faults.internalError('relay', err);
    } else {
      this.ctx.log.debug('HTTP/2 frames could not be read; connection closed', { from, error: frameError.message, peer: this.conn.peer });
    }
    if (from === 'client') {
      this.ctx.faults.connectionTerminated('protocol_error');
      const code = frameError?.h2Code ?? Http2Error.INTERNAL_ERROR;
      this.ctx.observer.goaway('proxy', code);
      if (this.phase !== 'local') this.writer.sendLast([goawayFrame(this.calls.states.last, code)]);
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
    if (this.phase !== 'open') return;
    this.upConn.closeTime = now();
    this.ctx.observer.connectionClosed(this.upConn);
    // Gone as it said it would (GOAWAY): the client's connection goes on without it.
    if (this.goawayHidden && this.writer.canAdd()) return this.detach();
    this.ending ??= { side: 'upstream', code: CONNECTION_CLOSED };
    if (this.writer.canAdd()) return this.upstreamLost();
    // Cut in the middle of a frame (or before it spoke): nothing can be added, and the
    // calls still in flight read as resets.
    const last = [...this.streams.keys()].map((id) => rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
    if (!this.goawaySent) last.push(goawayFrame(this.calls.states.last, Http2Error.NO_ERROR));
    this.writer.sendLast(last);
    this.enter('closed');
    this.finish();
    this.lingeringClose();
  }

  /**
   * The upstream's connection broke between frames with calls in flight: each
   * ends in its own protocol's words, never as the client's cancel
   * (LocalEndings.lost), then GOAWAY, and the connection closes once every call
   * has its ending, so that the client's next call opens a new one.
   */
  private upstreamLost(): void {
    this.enter('lost');
    // Reading may have waited for the upstream's socket to drain: the client's WINDOW_UPDATEs still count.
    this.down.resume();
    const lost = this.ending!;
    this.writer.cork();
    this.writer.flush();
    for (const [id, stream] of this.streams) if (!stream.via) this.endings.lost(id, stream, lost);
    if (!this.goawaySent) {
      this.goawaySent = true;
      this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
      this.writer.write(goawayFrame(this.calls.states.last, Http2Error.NO_ERROR));
    }
    this.writer.writeHeld();
    this.writer.uncork();
    if (!this.writer.holding) return this.closeLost();
    // A client that opens no window in time gets the reset the ending could not be.
    setTimeout(() => {
      if (this.phase !== 'lost') return;
      for (const { id, stream } of this.writer.dropHeld()) {
        this.writer.write(rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
        this.calls.end(id, stream, lost);
      }
      this.closeLost();
    }, LOCAL_CLOSE_MS).unref();
  }

  private closeLost(): void {
    this.enter('closed');
    this.finish();
    this.lingeringClose();
  }

  private writeHeldThenClose(): void {
    this.writer.writeHeld();
    if (this.phase === 'lost' && !this.writer.holding) this.closeLost();
  }

  private close(): void {
    const wasOpen = this.phase === 'open';
    if (!this.enter('closed')) return;
    this.finish();
    this.lingeringClose();
    if (!this.up.destroyed) {
      this.up.destroy();
      if (wasOpen) {
        this.upConn.closeTime = now();
        this.ctx.observer.connectionClosed(this.upConn);
      }
    }
  }

  /** Ends the calls still in flight with the reason the connection went. */
  private finish(): void {
    this.calls.endAll(this.ending ?? { side: 'client', code: Http2Error.CANCEL });
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
    this.writer.send(goawayFrame(MAX_STREAM_ID, Http2Error.NO_ERROR));
    setTimeout(() => {
      if (this.phase !== 'open' && this.phase !== 'detached') return;
      this.refuseAbove = this.calls.states.last;
      this.draining = true;
      this.writer.send(goawayFrame(this.refuseAbove, Http2Error.NO_ERROR));
      if (this.streams.size === 0) setImmediate(() => this.streams.size === 0 && this.close());
    }, SECOND_GOAWAY_MS).unref();
  }

  destroy(): void {
    this.ending ??= { side: 'proxy', code: Http2Error.CANCEL };
    this.close();
    this.down.destroy();
  }
}
