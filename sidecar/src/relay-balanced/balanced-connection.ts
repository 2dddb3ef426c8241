// One client's HTTP/2 connection on the balanced relay (outbound, per-call
// balancing at frame level): rpcscope is the HTTP/2 server here (h2-hop.ts), and
// each stream the client opens becomes a call (balanced-call.ts) on a connection
// to the endpoint its pick chose (endpoint-hops.ts). The connection's own part is
// its streams as a whole: refusals past its limits, floods cut (frame-budget.ts),
// the two-step GOAWAY when it ages out or the sidecar drains, and every call
// ending when the client goes.
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import type { TerminationReason } from '../call/faults.ts';
import { ClientFrameBudget, REFUSAL_BODY, REFUSAL_FIELDS, RESET_FLOOD, STREAM_LIMIT } from '../relay/frame-budget.ts';
import type { HeaderList } from '../relay/hpack-decoder.ts';
import { MAX_RETAINED_BYTES, MAX_STREAMS } from '../relay/relay-calls.ts';
import { StreamTable } from './stream-table.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { BalancedCall, requestShape, type CallHooks, type RequestShape } from './balanced-call.ts';
import type { EndpointHops } from './endpoint-hops.ts';
import { H2Hop, type StreamSink } from './h2-hop.ts';

/** What a client connection is given: streams of 256 KiB, 1 MiB in all, credited once passed on, and MAX_STREAMS at once. */
const CLIENT_WINDOWS = { stream: 256 * 1024, connection: 1024 * 1024, creditOnReceipt: false, maxStreams: MAX_STREAMS } as const;

/** The sink of a stream answered before it was a call: nothing it sends is read. */
const IGNORED: StreamSink = { headers: () => {}, data: () => {}, reset: () => {}, sent: () => {} };

/** Between the two GOAWAYs: time for streams the client sent before the first to arrive. */
const SECOND_GOAWAY_MS = 1000;

export class BalancedConnection {
  private readonly hop: H2Hop;
  private readonly calls = new StreamTable<BalancedCall>();
  private readonly budget = new ClientFrameBudget();
  /** What a call tells its connection: it ended; its client reset it before its answer. */
  private readonly hooks: CallHooks = {
    ended: (id) => this.ended(id),
    resetBeforeAnswer: () => this.resetBeforeAnswer(),
    retain: (octets) => {
      if (this.retained + octets > MAX_RETAINED_BYTES) return false;
      this.retained += octets;
      return true;
    },
    release: (octets) => void (this.retained -= octets),
  };
  /** Request header lists and bodies the connection's calls keep while they may be sent again, against MAX_RETAINED_BYTES. */
  private retained = 0;
  /** The shape of the last request block kept by the decoder, and its number (shapeOf). */
  private lastRepeat = 0;
  private lastShape: RequestShape | undefined;
  /** The second GOAWAY went: the connection closes once its calls are over. */
  private draining = false;
  private done = false;
  private closing = false;

  /** The connection is over, or closing with nothing left to send. */
  get settled(): boolean {
    return this.done || this.closing;
  }

  constructor(private readonly ctx: ProxyContext, private readonly conn: ConnectionRecord, private readonly socket: net.Socket, private readonly endpoints: EndpointHops) {
    socket.setNoDelay(true);
    this.hop = new H2Hop(socket, 'server', {
      // Floods are cut before their frames are read (frame-budget.ts).
      screen: (chunk) => {
        const flood = this.budget.read(chunk);
        if (flood) this.cut(flood.reason, Http2Error.ENHANCE_YOUR_CALM, flood.message);
      },
      opened: (id, list, end, overflowed, listSize, repeat) => this.opened(id, list, end, overflowed, listSize, repeat),
      settled: () => {},
      goaway: (_last, code) => ctx.observer.goaway('client', code),
      closed: () => this.closed(),
      dataFrameSent: () => this.budget.dataFrameSent(),
      failed: (err) => this.unreadable(err),
      acknowledged: () => this.budget.settingsAcknowledged(),
    }, CLIENT_WINDOWS);
    // The client is held to the stream limit of these SETTINGS once it acknowledges them (frame-budget.ts).
    this.budget.upstreamSettings(this.hop.start());
    socket.resume();
  }

  private opened(id: number, list: HeaderList, end: boolean, overflowed: boolean, listSize: number, repeat: number): StreamSink | undefined {
    // Past the limit it acknowledged (RFC 9113 §5.1.2): a connection error, as nghttp2 makes it.
    if (this.budget.overStreamLimit(this.calls.size)) return void this.cut(STREAM_LIMIT.reason, Http2Error.PROTOCOL_ERROR, STREAM_LIMIT.message);
    if (overflowed) return void this.refuseHeaderList(id);
    if (this.calls.size >= MAX_STREAMS) {
      this.ctx.faults.streamRefused('stream_limit');
      return void this.refuse(id, Http2Error.REFUSED_STREAM);
    }
    // The connection's calls keep at most MAX_RETAINED_BYTES of requests and bodies, as nghttp2 bounds a session's memory.
    if (!this.hooks.retain(listSize)) {
      this.ctx.faults.streamRefused('memory_budget');
      return void this.refuse(id, Http2Error.REFUSED_STREAM);
    }
    const call = new BalancedCall(this.ctx, this.conn, this.hop, id, list, this.shapeOf(list, repeat), end, listSize, this.endpoints, this.hooks);
    if (call.over) return this.hop.streams.get(id)?.sink;
    this.calls.set(id, call);
    return this.hop.streams.get(id)?.sink;
  }

  /**
   * What the call reads of its request's fields. A client sends the same block
   * on every call of a method (the same deadline too, or none): a block that
   * repeats the last one kept (its decoder's `repeat`) has the same shape, which
   * is read once. A tRPC shape holds its call's own procedures, so is never kept.
   */
  private shapeOf(list: HeaderList, repeat: number): RequestShape {
    if (repeat !== 0 && repeat === this.lastRepeat) return this.lastShape!;
    const shape = requestShape(list, this.ctx.config.trpcPrefix);
    if (repeat !== 0 && shape.detected.trpc === undefined) {
      this.lastRepeat = repeat;
      this.lastShape = shape;
    }
    return shape;
  }

  /** A stream refused before it was a call: RST_STREAM with `code` (REFUSED_STREAM: the client may send it again, RFC 9113 §8.7). */
  private refuse(id: number, code: number): void {
    const s = this.hop.accept(id, IGNORED);
    this.hop.reset(s, code);
  }

  /**
   * A request header list over the size: 431, as the terminating path and the
   * 1:1 relay answer it, never sent on; the first on a connection also ends the
   * connection gracefully (two-step GOAWAY), counted as bad_request.
   */
  private refuseHeaderList(id: number): void {
    const s = this.hop.accept(id, IGNORED);
    this.hop.headers(s, REFUSAL_FIELDS.flat(), false);
    this.hop.data(s, REFUSAL_BODY, true);
    if (!this.budget.firstHeaderListRefused()) return;
    this.ctx.faults.connectionTerminated('bad_request');
    this.goAway();
  }

  /** A call's client reset it before its answer: what a rapid-reset flood is made of (frame-budget.ts). */
  private resetBeforeAnswer(): void {
    if (!this.budget.streamReset()) this.cut(RESET_FLOOD.reason, Http2Error.ENHANCE_YOUR_CALM, RESET_FLOOD.message);
  }

  private ended(id: number): void {
    this.calls.delete(id);
    if (this.draining && this.calls.size === 0) this.close();
  }

  /** The client's connection went: its calls end as the client's doing. */
  private closed(): void {
    if (this.done) return;
    this.done = true;
    for (const call of this.calls.values()) call.clientGone();
    this.calls.clear();
    // A connection the hop ended itself (GOAWAY sent) lingers for the client to read it; any other is gone.
    if (!this.socket.writableEnded) this.socket.destroy();
  }

  /** The client's bytes broke HTTP/2 (counted as a connection the sidecar ended), or rpcscope failed reading them (counted as its own fault). */
  private unreadable(err: unknown): void {
    if (hasCode(err, ErrorCode.H2_FRAME)) {
      this.ctx.faults.connectionTerminated('protocol_error');
      this.ctx.log.debug('HTTP/2 frames could not be read; connection closed', { error: (err as Error).message, peer: this.conn.peer });
    } else this.ctx.faults.internalError('relay', err);
  }

  /** A flood, or streams past the limit: GOAWAY with `code`, and the connection ends (as the 1:1 relay ends it). */
  private cut(reason: TerminationReason, code: number, message: string): void {
    if (this.done || this.hop.closed) return;
    this.ctx.faults.connectionTerminated(reason);
    this.ctx.observer.goaway('proxy', code);
    this.ctx.log.warn('client connection cut', { reason, detail: message });
    this.hop.fail(code, new Error(message));
  }

  /**
   * The two-step GOAWAY (--max-connection-age, SIGTERM): first with the largest id,
   * so streams in flight still arrive; a second later with the last one opened,
   * and the connection closes once its calls have ended.
   */
  goAway(): void {
    if (this.done || this.hop.goingAway) return;
    this.hop.goAway(Http2Error.NO_ERROR, 0x7fffffff);
    this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
    this.hop.goingAway = false;
    setTimeout(() => {
      if (this.done) return;
      this.hop.goAway(Http2Error.NO_ERROR);
      this.draining = true;
      if (this.calls.size === 0) this.close();
    }, SECOND_GOAWAY_MS).unref();
  }

  private close(): void {
    if (this.done || this.closing) return;
    this.closing = true;
    this.hop.end();
  }

  destroy(): void {
    this.socket.destroy();
  }
}
