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
// What stays here is where the connection is (its phase, and every move between
// phases) and the two frame sinks, which hand each frame to the part that owns
// what it touches: a new client stream to the admission (relay-admission.ts),
// the client's further frames on its calls to client-requests.ts, the upstream's
// to upstream-responses.ts. docs/architecture.md lists the other parts.
import type net from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED } from '../call/call-record.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import type { TerminationReason } from '../call/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { H2Keepalive } from '../h2/h2-keepalive.ts';
import { MAX_HEADER_LIST_SIZE } from '../h2/header-list-size.ts';
import { clientKeepalive, type KeepaliveHost } from './client-keepalive.ts';
import { ClientRequests } from './client-requests.ts';
import { ClientWriter, type ClientWriterHost } from './client-writer.ts';
import { ClientFrameBudget, RESET_FLOOD, STREAM_LIMIT } from './frame-budget.ts';
import { FrameError, FrameParser, decoded, type FrameSink } from './frame-parser.ts';
import { voidFrame } from './frame-rewrite.ts';
import { DEFAULT_MAX_FRAME_SIZE, Flag } from '../h2/frame-types.ts';
import { goawayFrame, rstStreamFrame, windowUpdateFrame } from '../h2/frames.ts';
import { DEFAULT_TABLE_SIZE, HpackDecoder } from './hpack-decoder.ts';
import { LocalEndings } from './local-endings.ts';
import { StreamAdmission } from './relay-admission.ts';
import { RelayCalls } from './relay-calls.ts';
import { NEXT, type Phase } from './relay-phase.ts';
import { RelayDetour, type DetourHost } from './relay-detour.ts';
import { RelayEnding } from './relay-ending.ts';
import { RelayGoaways } from './relay-goaway.ts';
import { RelaySettings } from './relay-settings.ts';
import type { RelayStream } from './relay-stream.ts';
import { UpstreamLink, connectUpstream } from './upstream-connect.ts';
import { UpstreamResponses } from './upstream-responses.ts';
import { UpstreamWriter } from './upstream-writer.ts';

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
export class RelayConnection implements ClientWriterHost, DetourHost, KeepaliveHost {
  /** Where the connection is: only `enter` moves it. */
  phase: Phase = 'connecting';
  private readonly ctx: ProxyContext;
  private readonly conn: ConnectionRecord;
  private readonly down: net.Socket;
  private readonly up: net.Socket;
  private readonly upstream: UpstreamLink;
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
  /** What becomes of a new client stream; the client's frames on its open calls; the upstream's on them. */
  private readonly admission: StreamAdmission;
  private readonly requests: ClientRequests;
  private readonly responses: UpstreamResponses;
  private readonly settings: RelaySettings;
  private readonly goaways: RelayGoaways;
  /** Floods of frames the client sends (frame-budget.ts), resets among them, and the stream limit it acknowledged. */
  private readonly frameBudget = new ClientFrameBudget();
  /** Why the connection ends, and so its calls still in flight. */
  private readonly ending: RelayEnding;
  private readonly translate: boolean;
  /** The pieces being read from each side, where a frame may be rewritten in place before it goes on (frame-rewrite.ts). */
  private clientPiece: Buffer | undefined;
  private upstreamPiece: Buffer | undefined;
  /** PINGs a client gone quiet (client-keepalive.ts). */
  private readonly keepalive: H2Keepalive;

  constructor(opts: RelayOptions) {
    const { ctx, target } = opts;
    this.ctx = ctx;
    this.conn = opts.conn;
    this.down = opts.downstream;
    this.upstream = new UpstreamLink(ctx.observer, ctx.nextConnId(), target.authority);
    this.translate = opts.translate;
    this.fromClient = new FrameParser(this.clientSink(), true, undefined, opts.translate ? (bytes) => this.toUpstream.pass(bytes) : undefined);
    this.fromUpstream = new FrameParser(this.upstreamSink(), false);
    // The client's frames are held to the app's SETTINGS_MAX_FRAME_SIZE, 16 KiB until it says otherwise.
    this.fromClient.maxFrameSize = DEFAULT_MAX_FRAME_SIZE;
    this.calls = new RelayCalls(this.upstream.record, () => this.callsEnded());
    this.streams = this.calls.streams;
    this.writer = new ClientWriter(this.down, this.fromUpstream, this);
    this.toUpstream = new UpstreamWriter(this.down, this.fromClient, this.requestHpack, opts.translate);
    this.goaways = new RelayGoaways(ctx, this.writer, this.calls.states);
    this.ending = new RelayEnding(ctx, this.conn, this.calls, this.goaways);
    this.detour = new RelayDetour(ctx, target, this.writer, this.calls, this);
    this.endings = new LocalEndings(ctx, this.conn, target, this.writer, this.toUpstream, this.calls);
    const { conn, translate, requestHpack, responseHpack, fromClient, writer, toUpstream, frameBudget, streams, calls, goaways, endings, detour } = this;
    this.admission = new StreamAdmission({ ctx, conn, target, translate, requestHpack, frameBudget, calls, goaways, endings, detour, writer, toUpstream, host: this });
    this.requests = new ClientRequests(calls, detour, endings, writer, toUpstream, requestHpack, fromClient, frameBudget);
    this.responses = new UpstreamResponses(calls, detour, goaways, writer, frameBudget, this.fromUpstream, this.upstream);
    this.settings = new RelaySettings({ requestHpack, responseHpack, fromClient, writer, toUpstream, frameBudget, streams, windowsMoved: () => this.writeHeldThenClose() });
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
    this.keepalive = clientKeepalive(ctx.config, this.down, this.writer, this);
    this.keepalive.start();
    this.down.resume();
  }

  /** The last stream id of the upstream's GOAWAY (DetourHost). */
  get upstreamLast(): number | undefined {
    return this.goaways.upstreamLast;
  }

  /** The client answered no PING in time (KeepaliveHost): gone without FIN or RST. Its calls end as a client gone, and the app's streams with the upstream connection. */
  clientVanished(): void {
    this.ending.vanished();
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
    this.upstream.opened();
    this.down.resume();
  }

  private onClientBytes(chunk: Buffer): void {
    if (this.phase === 'closed') return;
    // Frame floods are cut before any of their bytes is passed on.
    const flood = this.frameBudget.read(chunk);
    if (flood) return this.cut(flood.reason, Http2Error.ENHANCE_YOUR_CALM, flood.message);
    // What one read leads to goes out in one write per direction (one TLS record toward
    // a TLS client): the bytes passed on (a piece per run of frames in translate mode)
    // with the frames the relay adds, and every frame it writes to the client meanwhile.
    this.toUpstream.batch();
    this.writer.batch();
    try {
      this.readClient(chunk);
    } finally {
      this.writer.endBatch();
      this.toUpstream.endBatch();
    }
  }

  private readClient(chunk: Buffer): void {
    this.clientPiece = chunk;
    this.toUpstream.reading = true;
    try {
      this.fromClient.push(chunk);
    } catch (err) {
      return this.shadowFailed('client', err);
    } finally {
      this.toUpstream.reading = false;
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
        const list = decoded(this.requestHpack, block);
        const existing = this.streams.get(id);
        if (existing) return this.requests.trailers(id, existing, flags, block, list);
        // A stream already over, whose late frames the app ignores: nothing to count (stream-states.ts).
        if (!this.calls.states.opening(id)) return void this.toUpstream.rewrite(id, flags, block, list, undefined);
        const admitted = this.admission.admit(id, flags, block, list, this.phase);
        if (admitted === 'stream_limit') return this.cut(STREAM_LIMIT.reason, Http2Error.PROTOCOL_ERROR, STREAM_LIMIT.message);
        if (admitted === 'header_list') {
          this.ctx.faults.connectionTerminated('bad_request');
          this.goAway();
        }
      },
      data: (id, chunk, flags, last) => this.requests.data(id, chunk, flags, last, this.phase),
      rstStream: (id, code) => {
        if (!this.requests.reset(id, code)) this.cut(RESET_FLOOD.reason, Http2Error.ENHANCE_YOUR_CALM, RESET_FLOOD.message);
      },
      settings: (flags, payload) => this.settings.fromClient(flags, payload, this.phase),
      goaway: (_last, code) => this.ctx.observer.goaway('client', code),
      windowUpdate: (id, increment, payload) => {
        if (id !== 0) this.requests.windowUpdate(id, increment);
        else {
          this.writer.connectionUpdate(increment);
          // What the relay's own DATA took of the window is the upstream's to hear of only while it keeps the window.
          if (this.phase === 'open') this.writer.repay(increment, payload, this.clientPiece);
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
      headers: (id, flags, block, promised) => this.responses.headers(id, flags, block, decoded(this.responseHpack, block), promised),
      data: (id, chunk, flags, last) => this.responses.data(id, chunk, flags, last),
      rstStream: (id, code, payload) => this.responses.reset(id, code, payload, this.upstreamPiece),
      settings: (flags, payload) => this.settings.fromUpstream(flags, payload),
      goaway: (last, code, payload) => this.responses.pastLast(last, this.goaways.fromUpstream(last, code, payload, this.upstreamPiece)),
      windowUpdate: () => {},
      ping: (flags, payload) => void (flags & Flag.ACK ? this.writer.clientPings.acked(payload) : this.writer.appPings.sent(payload)),
      other: () => {},
    };
  }

  /** The last call open ended: past the second GOAWAY, the connection closes once the bytes being read now (the call's last frames among them) have gone on. */
  private callsEnded(): void {
    if (this.goaways.draining && (this.phase === 'open' || this.phase === 'detached')) setImmediate(() => this.streams.size === 0 && this.close());
  }

  /** A call's held last DATA went (ClientWriter): it ends as the connection's calls do. */
  heldWritten(id: number, stream: RelayStream): void {
    this.calls.end(id, stream, this.ending.reset);
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
    this.endings.unreachableAll(this.settings.takeUnacknowledged(), reason);
    setTimeout(() => {
      if (this.phase !== 'local') return;
      this.writer.write(this.goaways.last(Http2Error.NO_ERROR));
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
    this.endings.lostAll(lost);
    // What the upstream had not opened again of the client's connection window.
    this.writer.write(windowUpdateFrame(0, DETACH_CREDIT));
    this.writer.writeHeld();
    this.writer.uncork();
    this.detour.flushOut();
  }

  /** The relay ends a misbehaving client's connection: GOAWAY with `code`, then close. */
  private cut(reason: TerminationReason, code: number, message: string): void {
    if (this.phase === 'closed') return;
    const goaway = this.ending.cut(reason, code, message);
    if (this.phase !== 'local') this.writer.sendLast([goaway]);
    this.close();
  }

  /** A direction's bytes could not be read: the peers see the same bytes and will end the connection; the relay ends it now. */
  private shadowFailed(from: 'client' | 'upstream', err: unknown): void {
    const goaway = this.ending.unreadable(from, err);
    if (goaway && this.phase !== 'local') this.writer.sendLast([goaway]);
    this.close();
  }

  private onClientClose(): void {
    // The client's connection went without a reset of its own: counted apart from resets, as the terminating path does.
    this.ending.unlessKnown({ side: 'client', code: CONNECTION_CLOSED });
    this.close();
  }

  private onUpstreamClose(): void {
    if (this.phase === 'connecting') return this.answerLocally('upstream closed the connection');
    if (this.phase !== 'open') return;
    this.upstream.closed();
    // Gone as it said it would (GOAWAY): the client's connection goes on without it.
    if (this.goaways.upstreamHidden && this.writer.canAdd()) return this.detach();
    this.ending.unlessKnown({ side: 'upstream', code: CONNECTION_CLOSED });
    if (this.writer.canAdd()) return this.upstreamLost();
    // Cut in the middle of a frame (or before it spoke): nothing can be added, and the
    // calls still in flight read as resets.
    const last = [...this.streams.keys()].map((id) => rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
    if (!this.goaways.sent) last.push(goawayFrame(this.calls.states.last, Http2Error.NO_ERROR));
    this.writer.sendLast(last);
    this.enter('closed');
    this.ending.finish();
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
    const lost = this.ending.reset!;
    this.writer.cork();
    this.writer.flush();
    this.endings.lostAll(lost);
    if (!this.goaways.sent) this.writer.write(this.goaways.last(Http2Error.NO_ERROR));
    this.writer.writeHeld();
    this.writer.uncork();
    if (!this.writer.holding) return this.closeLost();
    // A client that opens no window in time gets the reset the ending could not be.
    setTimeout(() => {
      if (this.phase !== 'lost') return;
      this.endings.resetHeld(lost);
      this.closeLost();
    }, LOCAL_CLOSE_MS).unref();
  }

  private closeLost(): void {
    this.enter('closed');
    this.ending.finish();
    this.lingeringClose();
  }

  private writeHeldThenClose(): void {
    this.writer.writeHeld();
    if (this.phase === 'lost' && !this.writer.holding) this.closeLost();
  }

  private close(): void {
    const wasOpen = this.phase === 'open';
    if (!this.enter('closed')) return;
    this.ending.finish();
    this.lingeringClose();
    if (!this.up.destroyed) {
      this.up.destroy();
      if (wasOpen) this.upstream.closed();
    }
  }

  /**
   * The two-step GOAWAY for --max-connection-age and SIGTERM (RelayGoaways): the
   * connection closes once its calls have ended after the second step; the
   * listener ends whatever outlives the grace period or the drain timeout.
   */
  goAway(): void {
    if (this.phase === 'closed' || !this.goaways.first()) return;
    setTimeout(() => {
      if (this.phase !== 'open' && this.phase !== 'detached') return;
      this.goaways.second();
      if (this.streams.size === 0) setImmediate(() => this.streams.size === 0 && this.close());
    }, SECOND_GOAWAY_MS).unref();
  }

  destroy(): void {
    this.ending.unlessKnown({ side: 'proxy', code: Http2Error.CANCEL });
    this.close();
    this.down.destroy();
  }
}
