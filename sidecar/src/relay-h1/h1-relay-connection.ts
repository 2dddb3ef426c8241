// One client HTTP/1.1 connection relayed onto one upstream connection
// (--http1-data-plane relay): each request and response head is read by the
// strict parser (h1/) and passed on as its bytes, less its hop-by-hop lines;
// bodies pass as they arrive, framing and all, read only for where they end and
// the payload the call is counted with. The same Call as the terminating path
// (forward-h1.ts) records each exchange, so the metrics are the same.
//
// An upgrade (`Connection: upgrade` with Upgrade, RFC 9110 §7.8; WebSocket, RFC
// 6455 §4) goes to the app with its Connection and Upgrade lines, as the
// terminating path (forward-upgrade.ts) sends it: h2c too, its HTTP2-Settings
// dropped as hop-by-hop. A body, if the head declares one, is an HTTP/1.1 body
// and passes in its framing before the new protocol's bytes (RFC 9110 §7.8; the
// terminating path sends a GET's chunked body as none, node:http's choice). A 101
// joins the sockets (h1-tunnel.ts); any other final answer is relayed and both
// connections close after it, as on the terminating path: what the client sent
// past its hand-shake may be the new protocol's bytes, never to be read as
// requests (test/reliability/h1-smuggling.test.ts).
//
// The upstream connection it holds, and the getting (at the gate, bounded as on
// the terminating path), keeping and letting go of it, are h1-upstream-hold.ts's;
// the answers the relay gives itself and the exchanges it ends on its own (a
// request past --upstream-max-pending answered 503 and counted, an app that gave
// no answer, a request refused, a deadline passed) are h1-relay-answers.ts's;
// this connection keeps its client's side, the reading of both sides' messages,
// and the exchange in flight.
//
// A call the relay cannot carry on its one upstream connection (transcoded,
// bridged, its share of a split, gRPC-family under --grpc-upstream) hands the
// client connection, at that request's head, to the terminating path for good
// (handOver): chosen per request, where HTTP/2's relay chooses per connection.
//
// Not (yet) done here, and what happens instead:
// - The gate is the relay's own: HTTP/2 callers translated to an HTTP/1.1 app
//   (the terminating path's agents) are bounded apart, so the app may see up to
//   twice --upstream-max-connections when both kinds of caller come.
// - Expect: 100-continue passes on; the app's 100 is passed back. An app that
//   answers before the body came ends the connection after its answer.
// - A response read until close (no length, not chunked) is relayed, and the
//   client's connection closes after it.
// - An HTTP/1.0 client is answered in the app's framing (chunked included).
// - The keep-alive race (the app's idle timeout closes its connection just as, or
//   before, the next request is written): an upstream connection that closes
//   with no request in flight is let go, the client's connection stays, and the
//   next request connects anew; one idle for IDLE_UPSTREAM_SOCKET_MS is closed
//   by the relay first, as the terminating path's pool does. A request written
//   on a reused connection that closes before any byte of its answer is sent
//   once more on a new connection when its method is idempotent and all of it
//   is still held (h1-relay-replay.ts, RFC 9112 §9.3.1); any other is answered
//   502. Requests pipelined behind it wait unread meanwhile, so they go on, and
//   are answered, in order.
// - Idle and header timeouts are the listener's (ConnectionTimeouts), as on the
//   terminating path.
// - A gRPC-Web or Connect stream whose app connection dies between two frames of
//   a chunked body ends with its protocol's UNAVAILABLE frame (h1-relay-answers.ts's
//   endLost), as on the terminating path; mid-frame, mid-chunk or in a body of
//   declared length the client's connection is cut.
import type net from 'node:net';
import { Call } from '../call/call.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { now } from '../clock.ts';
import { BodyReader } from '../h1/body-reader.ts';
import { H1Error } from '../h1/h1-error.ts';
import { HeadReader, parseRequestHead, parseResponseHead, responseFraming, type RequestHead, type ResponseHead } from '../h1/message-head.ts';
import { detectRequest, isGrpcFamily } from '../protocol/detect.ts';
import type { Protocol } from '../protocol/vocabulary.ts';
import { CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { EndpointGate } from '../upstream/endpoint-gate.ts';
import type { H1IdleUpstreams } from './h1-idle-upstreams.ts';
import { connectionLine, H1RelayAnswers, type H1Exchange } from './h1-relay-answers.ts';
import type { H1RelayUpstream } from './h1-relay-upstream.ts';
import { RequestCopy } from './h1-relay-replay.ts';
import { H1Tunnel } from './h1-tunnel.ts';
import { H1UpstreamHold } from './h1-upstream-hold.ts';
import type { HeaderBag } from '../protocol/header-bag.ts';
import { bagOf, passHead, startsAsHttp1 } from './relay-heads.ts';

/** Heads past this size are refused (431), as Node's --max-http-header-size default. */
const MAX_HEAD_BYTES = 16 * 1024;
/** After its refusal, how long a client has to read it before its socket is destroyed (as the listener's). */
const REFUSED_LINGER_MS = 1000;

const enum Phase {
  /** Reading a request head. */
  Head,
  /** Passing the request's body on. */
  Body,
  /** The request is read whole; what the client sends next waits for its response. */
  Waiting,
  /** The client's connection is ending: nothing more is read. */
  Closing,
}

export interface H1RelayOptions {
  readonly ctx: ProxyContext;
  readonly conn: ConnectionRecord;
  readonly client: net.Socket;
  /** The upstream endpoint's gate (--upstream-max-connections and the rest), shared by the listener's relayed connections. */
  readonly gate: EndpointGate<H1RelayUpstream>;
  /** The app's connections no client connection holds: taken before connecting, given what a leaving client held. */
  readonly idleUpstreams: H1IdleUpstreams;
  /** Draining, or past --max-connection-age: the client is asked to close after its response. */
  readonly closing: () => boolean;
  /**
   * Hands the connection, its next request put back unread, to the terminating
   * path: for a call that needs one of its own upstream (transcoded, bridged, its
   * share of a split), which the relay cannot make.
   */
  readonly terminate: () => void;
}

export class H1RelayConnection {
  private readonly ctx: ProxyContext;
  private readonly client: net.Socket;
  private readonly conn: ConnectionRecord;
  private readonly closing: () => boolean;
  private readonly terminate: () => void;
  private phase = Phase.Head;
  private readonly reqHead = new HeadReader(MAX_HEAD_BYTES);
  private readonly reqBody = new BodyReader(MAX_HEAD_BYTES);
  private resHead = new HeadReader(MAX_HEAD_BYTES);
  private readonly resBody = new BodyReader(MAX_HEAD_BYTES);
  /** Client bytes past the request in flight, read once its response is done (pipelining). */
  private held: Buffer | undefined;
  private ex: H1Exchange | undefined;
  /** The upstream connection this connection holds, or waits at the gate for. */
  private readonly hold: H1UpstreamHold;
  /** The answers the relay gives itself, and the exchanges it ends on its own. */
  private readonly answers: H1RelayAnswers;
  /** A write toward the client waits for 'drain': the app's connection is not read meanwhile. */
  private clientBlocked = false;
  /** After a 101: the two sockets joined, no longer read here. */
  private tunnel: H1Tunnel | undefined;
  /**
   * What one read of a socket makes the relay write to the other side (a head
   * and the body bytes behind it, a request and the one pipelined after it) goes
   * in one write: the socket is corked for the read's processing. A write per
   * piece was a syscall per piece, about half the relay's CPU on REST calls.
   */
  private readonly onClientData = (chunk: Buffer): void => {
    const up = this.hold.socket;
    up?.cork();
    this.guard(() => this.fromClient(chunk, 0));
    up?.uncork();
  };
  private readonly onClientClose = (): void => this.guard(() => this.clientClosed());

  constructor({ ctx, conn, client, gate, idleUpstreams, closing, terminate }: H1RelayOptions) {
    this.ctx = ctx;
    this.conn = conn;
    this.client = client;
    this.closing = closing;
    this.terminate = terminate;
    this.hold = new H1UpstreamHold(ctx, gate, idleUpstreams, {
      guard: (fn) => this.guard(fn),
      busy: () => this.ex !== undefined,
      attached: () => {
        this.resHead = new HeadReader(MAX_HEAD_BYTES);
      },
      opened: (at) => this.upstreamOpened(at),
      failed: (err) => {
        if (this.ex) this.answers.upstreamFailed(this.ex, err);
      },
      data: (up, chunk) => {
        client.cork();
        this.guard(() => this.fromUpstream(up, chunk));
        client.uncork();
      },
      closed: (err) => this.upstreamClosed(err),
      sync: () => this.syncClient(),
    });
    this.answers = new H1RelayAnswers(ctx, conn, {
      closing,
      write: (bytes) => this.toClient(bytes),
      end: (ex, reset) => this.endExchange(ex, reset),
      done: (ex) => this.responseDone(ex),
      close: () => this.closeClient(),
      cut: () => client.destroy(),
      dropUpstream: () => this.hold.drop(),
    });
    client.setNoDelay(true);
    this.reqBody.onPayload = (slice) => this.ex?.call.tap.requestData(slice);
    this.resBody.onPayload = (slice) => this.ex?.call.tap.responseData(slice);
    client.on('data', this.onClientData);
    client.once('close', this.onClientClose);
    // The listener hands the socket over paused, its first bytes put back.
    client.resume();
  }

  /** Idle between requests: nothing is in flight or half read. */
  get idle(): boolean {
    return this.ex === undefined && this.held === undefined && this.reqHead.pending === 0 && this.tunnel === undefined;
  }

  /** Ends the connection now if idle; else after the response in flight (closing() says so by then). */
  drain(): void {
    if (this.idle) this.client.destroy();
  }

  destroy(): void {
    this.client.destroy();
    this.hold.drop();
    this.tunnel?.destroy();
  }

  /** A fault in the relay's own code ends this connection only. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.ctx.faults.internalError('relay', err);
      this.client.destroy();
      this.hold.drop();
    }
  }

  private fromClient(chunk: Buffer, from: number): void {
    let at = from;
    while (at < chunk.length) {
      if (this.phase === Phase.Closing) return;
      if (this.phase === Phase.Waiting) {
        const rest = chunk.subarray(at);
        this.held = this.held ? Buffer.concat([this.held, rest]) : rest;
        return this.syncClient();
      }
      try {
        if (this.phase === Phase.Head) {
          const end = this.reqHead.read(chunk, at);
          if (end < 0) return;
          at = end;
          const raw = this.reqHead.take();
          const req = parseRequestHead(raw);
          const headers = bagOf(req.fields);
          const found = detectRequest(req.method, req.target, headers, this.ctx.config.trpcPrefix);
          if (this.needsOwnCall(found.detected.protocol, req.method, req.target)) return this.handOver(raw, chunk.subarray(at));
          this.begin(req, headers, found);
        } else {
          const end = this.reqBody.read(chunk, at);
          if (end > at) this.sendBody(chunk.subarray(at, end));
          at = end;
          if (this.reqBody.done) this.requestRead();
        }
      } catch (err) {
        if (!(err instanceof H1Error)) throw err;
        return this.answers.refuse(this.ex, err);
      }
    }
  }

  /**
   * A call the relay cannot carry to its one upstream connection: one to be
   * transcoded, bridged or split (the translating stage would take it), or of
   * the gRPC family while --grpc-upstream takes those elsewhere.
   */
  private needsOwnCall(protocol: Protocol, method: string, target: string): boolean {
    const { config, translating } = this.ctx;
    if (config.grpcUpstream !== undefined && isGrpcFamily(protocol)) return true;
    return translating !== undefined && translating.wouldTake(protocol, method, target);
  }

  /**
   * A call the terminating path is to make (transcoded, bridged, its share of a
   * split), met at a request's head with nothing in flight: the connection goes
   * there for good, the head and what followed it put back unread, and the app's
   * idle connection is let go (to a call waiting at the gate, if one is). Its call is counted there, once.
   */
  private handOver(head: Buffer, rest: Buffer): void {
    this.phase = Phase.Closing;
    this.client.off('data', this.onClientData);
    this.client.off('close', this.onClientClose);
    this.hold.letGo();
    this.client.pause();
    this.client.unshift(rest.length === 0 ? head : Buffer.concat([head, rest]));
    this.terminate();
  }

  /** A request head: its call starts, and the head goes on to the app. */
  private begin(req: RequestHead, headers: HeaderBag, found: ReturnType<typeof detectRequest>): void {
    const { ctx } = this;
    const { detected, bare, contentType } = found;
    const call = new Call(ctx, this.conn, detected, '1.1', req.method, bare, headers);
    // An HTTP/1.0 request's Upgrade is ignored (RFC 9110 §7.8).
    const upgrade = req.upgrade !== undefined && req.minor >= 1;
    const ex: H1Exchange = { call, req, detected, contentType, countedOn: undefined, answered: false, inBody: false, upstreamKeeps: true, clientKeeps: true, copy: undefined, upgrade };
    this.ex = ex;
    this.phase = Phase.Body;
    this.reqBody.begin(req.framing);
    // A connection kept from an earlier exchange, or one a client left, which the app may be closing as this request goes.
    const reused = this.hold.claim();
    call.sent(ctx.config.upstream.authority);
    // HTTP/1.0 closes after each response unless asked not to; the app's connection is kept.
    const extra = (call.traceparent ? `traceparent: ${call.traceparent}\r\n` : '') + (req.minor === 0 ? 'connection: keep-alive\r\n' : '');
    const head = passHead(req, extra, { drop: call.traceparent ? 'traceparent' : undefined, keepUpgrade: upgrade });
    if (reused) ex.copy = RequestCopy.of(req.method, head);
    if (!this.upstream(ex)) return;
    if (this.hold.current?.record.openTime && !ex.countedOn) this.count(ex);
    this.hold.write(head);
    call.enforceDeadline(() => this.guard(() => {
      if (this.ex === ex) this.answers.expire(ex);
    }));
    if (this.reqBody.done) this.requestRead();
  }

  private sendBody(bytes: Buffer): void {
    this.ex?.copy?.add(bytes);
    this.hold.write(bytes);
  }

  private requestRead(): void {
    this.phase = Phase.Waiting;
    this.syncClient();
  }

  /**
   * The upstream connection the exchange goes on (h1-upstream-hold.ts), at once
   * or after the calls waiting at the gate before it. False when the queue is
   * full: the call is answered UNAVAILABLE (503).
   */
  private upstream(ex: H1Exchange): boolean {
    if (this.hold.acquire()) return true;
    this.answers.queueFull(ex);
    return false;
  }

  /** The upstream connection reached the app at `at`: the call waiting for it reached it only then. */
  private upstreamOpened(at: number): void {
    const ex = this.ex;
    if (!ex || ex.countedOn) return;
    ex.call.record.upstreamStartTime = at;
    this.count(ex);
  }

  private count(ex: H1Exchange): void {
    const record = this.hold.current!.record;
    ex.countedOn = record;
    record.calls++;
    record.active++;
  }

  private fromUpstream(up: H1RelayUpstream, chunk: Buffer): void {
    const ex = this.ex;
    // A byte of an answer came: the request was read, and is not sent again.
    if (ex) ex.copy = undefined;
    let at = 0;
    while (ex && at < chunk.length && this.ex === ex) {
      try {
        if (!ex.inBody) {
          if (this.resHead.pending === 0 && !startsAsHttp1(chunk, at)) return this.answers.notHttp1(ex);
          const end = this.resHead.read(chunk, at);
          if (end < 0) return;
          at = end;
          const res = parseResponseHead(this.resHead.take());
          if (res.status === 101 && ex.upgrade) return this.switchProtocols(ex, up, res, chunk.subarray(at));
          this.responseHead(ex, res);
        } else {
          const end = this.resBody.read(chunk, at);
          if (end > at) this.toClient(chunk.subarray(at, end));
          at = end;
          if (this.resBody.done) this.responseDone(ex);
        }
      } catch (err) {
        if (!(err instanceof H1Error)) throw err;
        return this.answers.upstreamFailed(ex, err);
      }
    }
    // Bytes from the app past its answer: its connection no longer follows the exchanges.
    if (at < chunk.length && this.hold.current === up) {
      const next = this.ex;
      this.hold.drop();
      if (next) this.answers.upstreamFailed(next, undefined);
    }
  }

  private responseHead(ex: H1Exchange, res: ResponseHead): void {
    const { record, tap } = ex.call;
    const framing = responseFraming(res, ex.req.method);
    if (res.status === 101) throw new H1Error('status_line', 'a 101 to a request the relay did not upgrade');
    // An interim answer (100 Continue, 103 Early Hints) passes on; the final one follows.
    if (res.status < 200) return this.toClient(passHead(res, ''));
    record.upstreamHeadersTime = now();
    tap.responseHeaders(res.status, bagOf(res.fields));
    // An upgrade the app declined ends both connections after its answer, as on the terminating path:
    // the client may already have sent bytes of the new protocol, which must not be read as requests.
    ex.upstreamKeeps = res.keepAlive && !ex.upgrade;
    ex.clientKeeps = ex.req.keepAlive && framing.kind !== 'close' && !ex.upgrade && !this.closing();
    ex.answered = true;
    ex.inBody = true;
    this.toClient(passHead(res, connectionLine(ex)));
    this.resBody.begin(framing);
    if (this.resBody.done) this.responseDone(ex);
  }

  /**
   * The app switched protocols: its 101 goes back with Connection and Upgrade, and
   * the sockets are joined (h1-tunnel.ts), each side's bytes read past its head first.
   */
  private switchProtocols(ex: H1Exchange, relayUp: H1RelayUpstream, res: ResponseHead, rest: Buffer): void {
    const { call } = ex;
    call.record.upstreamHeadersTime = now();
    call.tap.responseHeaders(101, bagOf(res.fields));
    this.ex = undefined;
    this.hold.detach();
    // The tunnel holds the connection, and its slot, until it closes.
    const up = relayUp.socket;
    // A tunnel may be quiet for long; the relay's idle close is for connections between requests.
    up.setTimeout(0);
    this.phase = Phase.Closing;
    this.client.off('data', this.onClientData);
    const toUpstream = this.held;
    this.held = undefined;
    this.client.write(passHead(res, '', { keepUpgrade: true }));
    this.tunnel = new H1Tunnel({ client: this.client, up, toUpstream, toClient: rest }, call, () => {
      if (ex.countedOn) ex.countedOn.active--;
    });
  }

  /** The response is passed on whole: the call ends, and the next request is read. */
  private responseDone(ex: H1Exchange): void {
    ex.call.record.upstreamEndTime = now();
    this.endExchange(ex);
    // A response that came before its request's body was read whole leaves the connection unreadable.
    if (!ex.upstreamKeeps || this.phase !== Phase.Waiting) this.hold.drop();
    // Draining since the head went: the client, told nothing, is closed between responses.
    if (this.phase !== Phase.Waiting || !ex.clientKeeps || this.closing()) return this.closeClient();
    this.phase = Phase.Head;
    this.hold.offer();
    const held = this.held;
    this.held = undefined;
    this.syncClient();
    if (held) this.fromClient(held, 0);
  }

  private endExchange(ex: H1Exchange, reset?: CallReset): void {
    this.ex = undefined;
    ex.inBody = false;
    if (ex.countedOn) ex.countedOn.active--;
    ex.call.end(reset);
  }

  /** The app's connection closed (no longer held): between exchanges the next request connects again. */
  private upstreamClosed(err: (Error & { code?: string }) | undefined): void {
    this.syncClient();
    const ex = this.ex;
    if (!ex) return;
    if (ex.copy?.whole) return this.retry(ex, ex.copy);
    if (!ex.answered) return this.answers.upstreamFailed(ex, err);
    // A response read until close ends here; any other was cut short, and the client must not take it for whole.
    if (this.resBody.untilClose) return this.responseDone(ex);
    if (this.answers.endLost(ex, this.resBody.betweenChunks)) return;
    this.endExchange(ex, { side: 'upstream', code: CONNECTION_CLOSED });
    this.client.destroy();
  }

  /**
   * The keep-alive race: the request goes once more, as it was sent, on a new
   * connection, and the client's bytes still to come follow it there. Its call
   * stays the one call; the new connection counts it when it is up.
   */
  private retry(ex: H1Exchange, copy: RequestCopy): void {
    ex.copy = undefined;
    if (ex.countedOn) {
      ex.countedOn.active--;
      ex.countedOn = undefined;
    }
    this.ctx.retries.retried('connection_closed');
    if (!this.upstream(ex)) return;
    for (const part of copy.take()) this.hold.write(part);
  }

  /** The client's connection ends once what was written to it is sent; a client that does not close is cut. */
  private closeClient(): void {
    this.phase = Phase.Closing;
    this.held = undefined;
    this.hold.letGo();
    this.client.end();
    // What the client still sends is read and dropped: closing on unread bytes would reset the connection.
    this.client.resume();
    setTimeout(() => this.client.destroy(), REFUSED_LINGER_MS).unref();
  }

  private clientClosed(): void {
    this.phase = Phase.Closing;
    const ex = this.ex;
    if (ex) this.hold.drop();
    else this.hold.letGo();
    if (ex) this.endExchange(ex, { side: 'client', code: CONNECTION_CLOSED });
  }

  private toClient(bytes: Buffer): void {
    const { client } = this;
    if (client.destroyed || client.write(bytes) || this.clientBlocked) return;
    this.clientBlocked = true;
    this.hold.socket?.pause();
    client.once('drain', () => {
      this.clientBlocked = false;
      this.hold.socket?.resume();
    });
  }

  /** The client is read while a request is being read and the app takes what it is sent. */
  private syncClient(): void {
    if (this.phase === Phase.Closing) return;
    if (this.phase === Phase.Waiting || this.hold.stalled) this.client.pause();
    else this.client.resume();
  }
}
