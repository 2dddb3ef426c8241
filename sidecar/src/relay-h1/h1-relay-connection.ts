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
// Not (yet) done here, and what happens instead:
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
//   terminating path; TLS upstreams keep the terminating path (h1-relay-applies.ts).
import { STATUS_CODES } from 'node:http';
import type net from 'node:net';
import { Call } from '../call/call.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { now } from '../clock.ts';
import { BodyReader } from '../h1/body-reader.ts';
import { H1Error } from '../h1/h1-error.ts';
import { HeadReader, parseRequestHead, parseResponseHead, responseFraming, type RequestHead, type ResponseHead } from '../h1/message-head.ts';
import { detectRequest, type Detected } from '../protocol/detect.ts';
import { localReply, type LocalCode } from '../protocol/local-reply.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { ALLOWED_METHODS, CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import { connectUpstream } from '../relay/upstream-connect.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { IDLE_UPSTREAM_SOCKET_MS } from '../upstream/h1-agent-pool.ts';
import { RequestCopy } from './h1-relay-replay.ts';
import { ReadWrites } from './read-writes.ts';
import { H1Tunnel } from './h1-tunnel.ts';
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

/** The exchange in flight: one request and its response. */
interface Exchange {
  readonly call: Call;
  readonly req: RequestHead;
  readonly detected: Detected;
  readonly contentType: string | undefined;
  /** Whether the upstream connection counts it among its calls. */
  counted: boolean;
  /** A final response head was written to the client (by the app or the relay). */
  answered: boolean;
  /** The response's body is being passed on. */
  inBody: boolean;
  /** Whether the app keeps its connection after this response. */
  upstreamKeeps: boolean;
  /** Whether the client's connection carries another request after this response. */
  clientKeeps: boolean;
  /**
   * The request as sent, while it may be sent again: written on a reused
   * connection, idempotent, within the bound, no byte of an answer yet, not yet retried.
   */
  copy: RequestCopy | undefined;
  /** The request asks to switch protocols (RFC 9110 §7.8), and went to the app with its Connection and Upgrade. */
  readonly upgrade: boolean;
}

export interface H1RelayOptions {
  readonly ctx: ProxyContext;
  readonly conn: ConnectionRecord;
  readonly client: net.Socket;
  /** Draining, or past --max-connection-age: the client is asked to close after its response. */
  readonly closing: () => boolean;
}

export class H1RelayConnection {
  private readonly ctx: ProxyContext;
  private readonly client: net.Socket;
  private readonly conn: ConnectionRecord;
  private readonly closing: () => boolean;
  private phase = Phase.Head;
  private readonly reqHead = new HeadReader(MAX_HEAD_BYTES);
  private readonly reqBody = new BodyReader(MAX_HEAD_BYTES);
  private resHead = new HeadReader(MAX_HEAD_BYTES);
  private readonly resBody = new BodyReader(MAX_HEAD_BYTES);
  /** Client bytes past the request in flight, read once its response is done (pipelining). */
  private held: Buffer | undefined;
  private ex: Exchange | undefined;
  private up: net.Socket | undefined;
  private upRecord: ConnectionRecord | undefined;
  private upError: (Error & { code?: string }) | undefined;
  /** A write toward the app (or the client) waits for 'drain': the other side is not read meanwhile. */
  private upBlocked = false;
  private clientBlocked = false;
  /** After a 101: the two sockets joined, no longer read here. */
  private tunnel: H1Tunnel | undefined;
  /** What one read of the client leads to goes to the app in one write (read-writes.ts). */
  private readonly upWrites = new ReadWrites((up, bytes) => this.writeUp(up, bytes));
  private readonly onClientData = (chunk: Buffer): void => this.guard(() => this.upWrites.run(() => this.fromClient(chunk, 0)));

  constructor({ ctx, conn, client, closing }: H1RelayOptions) {
    this.ctx = ctx;
    this.conn = conn;
    this.client = client;
    this.closing = closing;
    client.setNoDelay(true);
    this.reqBody.onPayload = (slice) => this.ex?.call.tap.requestData(slice);
    this.resBody.onPayload = (slice) => this.ex?.call.tap.responseData(slice);
    client.on('data', this.onClientData);
    client.once('close', () => this.guard(() => this.clientClosed()));
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
    this.up?.destroy();
    this.tunnel?.destroy();
  }

  /** A fault in the relay's own code ends this connection only. */
  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.ctx.faults.internalError('relay', err);
      this.client.destroy();
      this.up?.destroy();
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
          this.begin(parseRequestHead(this.reqHead.take()));
        } else {
          const end = this.reqBody.read(chunk, at);
          if (end > at) this.sendBody(chunk.subarray(at, end));
          at = end;
          if (this.reqBody.done) this.requestRead();
        }
      } catch (err) {
        if (!(err instanceof H1Error)) throw err;
        return this.refuse(err);
      }
    }
  }

  /** A request head: its call starts, and the head goes on to the app. */
  private begin(req: RequestHead): void {
    const { ctx } = this;
    const headers = bagOf(req.fields);
    const { detected, bare, contentType } = detectRequest(req.method, req.target, headers, ctx.config.trpcPrefix);
    const call = new Call(ctx, this.conn, detected, '1.1', req.method, bare, headers);
    // An HTTP/1.0 request's Upgrade is ignored (RFC 9110 §7.8).
    const upgrade = req.upgrade !== undefined && req.minor >= 1;
    const ex: Exchange = { call, req, detected, contentType, counted: false, answered: false, inBody: false, upstreamKeeps: true, clientKeeps: true, copy: undefined, upgrade };
    this.ex = ex;
    this.phase = Phase.Body;
    this.reqBody.begin(req.framing);
    // A connection kept from an earlier exchange, which the app may be closing as this request goes.
    const reused = this.up !== undefined;
    this.upstream();
    call.sent(ctx.config.upstream.authority);
    if (this.upRecord?.openTime) this.count(ex);
    // HTTP/1.0 closes after each response unless asked not to; the app's connection is kept.
    const extra = (call.traceparent ? `traceparent: ${call.traceparent}\r\n` : '') + (req.minor === 0 ? 'connection: keep-alive\r\n' : '');
    const head = passHead(req, extra, { drop: call.traceparent ? 'traceparent' : undefined, keepUpgrade: upgrade });
    if (reused) ex.copy = RequestCopy.of(req.method, head);
    this.toUpstream(head);
    call.enforceDeadline(() => this.guard(() => this.expire(ex)));
    if (this.reqBody.done) this.requestRead();
  }

  private sendBody(bytes: Buffer): void {
    this.ex?.copy?.add(bytes);
    this.toUpstream(bytes);
  }

  private requestRead(): void {
    this.phase = Phase.Waiting;
    this.syncClient();
  }

  /** The upstream connection, made at the first request and again after the app closed it. */
  private upstream(): net.Socket {
    if (this.up) return this.up;
    const { ctx } = this;
    const target = ctx.config.upstream;
    const record: ConnectionRecord = { id: ctx.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
    const up = connectUpstream(target, undefined, ctx.config.connectTimeoutMs, () => this.guard(() => {
      record.openTime = now();
      ctx.observer.connectionOpened(record);
      const ex = this.ex;
      // The call reached the upstream only once its connection was up.
      if (ex && !ex.counted) {
        ex.call.record.upstreamStartTime = record.openTime;
        this.count(ex);
      }
    }));
    this.up = up;
    this.upRecord = record;
    this.resHead = new HeadReader(MAX_HEAD_BYTES);
    this.upError = undefined;
    this.upBlocked = false;
    up.on('data', (chunk: Buffer) => this.guard(() => {
      // The response head and the body piece after it in one write to the client.
      const { client } = this;
      client.cork();
      try {
        this.fromUpstream(up, chunk);
      } finally {
        client.uncork();
      }
    }));
    // The app closed its side (RFC 9112 §9.6): with nothing in flight, the next request connects anew.
    up.once('end', () => this.guard(() => {
      if (this.up === up && !this.ex) this.dropUpstream();
    }));
    // Idle past the terminating path's limit: closed before the app's own keep-alive timeout can race a request.
    up.setTimeout(IDLE_UPSTREAM_SOCKET_MS, () => this.guard(() => {
      if (this.up === up && !this.ex) this.dropUpstream();
    }));
    up.on('error', (err: Error & { code?: string }) => {
      // One warn line per unreachable upstream, whichever path failed to connect.
      if (!record.openTime) ctx.connectFailures.report(target.authority, err);
      if (this.up === up) this.upError = err;
    });
    up.once('close', () => this.guard(() => {
      if (record.openTime) {
        record.closeTime = now();
        ctx.observer.connectionClosed(record);
      }
      if (this.up === up) this.upstreamClosed();
    }));
    return up;
  }

  private count(ex: Exchange): void {
    ex.counted = true;
    this.upRecord!.calls++;
    this.upRecord!.active++;
  }

  private fromUpstream(up: net.Socket, chunk: Buffer): void {
    if (this.up !== up) return;
    const ex = this.ex;
    // A byte of an answer came: the request was read, and is not sent again.
    if (ex) ex.copy = undefined;
    let at = 0;
    while (ex && at < chunk.length && this.ex === ex) {
      try {
        if (!ex.inBody) {
          if (this.resHead.pending === 0 && !startsAsHttp1(chunk, at)) return this.notHttp1(ex);
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
        return this.upstreamFailed(ex, err);
      }
    }
    // Bytes from the app past its answer: its connection no longer follows the exchanges.
    if (at < chunk.length && this.up === up) {
      const next = this.ex;
      this.dropUpstream();
      if (next) this.upstreamFailed(next, undefined);
    }
  }

  private responseHead(ex: Exchange, res: ResponseHead): void {
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
    this.toClient(passHead(res, this.connectionLine(ex)));
    this.resBody.begin(framing);
    if (this.resBody.done) this.responseDone(ex);
  }

  /**
   * The app switched protocols: its 101 goes back with Connection and Upgrade, and
   * the sockets are joined (h1-tunnel.ts), each side's bytes read past its head first.
   */
  private switchProtocols(ex: Exchange, up: net.Socket, res: ResponseHead, rest: Buffer): void {
    const { call } = ex;
    call.record.upstreamHeadersTime = now();
    call.tap.responseHeaders(101, bagOf(res.fields));
    this.ex = undefined;
    this.up = undefined;
    // A tunnel may be quiet for long; the relay's idle close is for connections between requests.
    up.setTimeout(0);
    this.phase = Phase.Closing;
    this.client.off('data', this.onClientData);
    const toUpstream = this.held;
    this.held = undefined;
    this.client.write(passHead(res, '', { keepUpgrade: true }));
    const upRecord = this.upRecord!;
    this.tunnel = new H1Tunnel({ client: this.client, up, toUpstream, toClient: rest }, call, () => {
      if (ex.counted) upRecord.active--;
    });
  }

  /** What the client is told of its connection, where the app's Connection field was dropped. */
  private connectionLine(ex: Exchange): string {
    if (!ex.clientKeeps) return 'connection: close\r\n';
    return ex.req.minor === 0 ? 'connection: keep-alive\r\n' : '';
  }

  /** The response is passed on whole: the call ends, and the next request is read. */
  private responseDone(ex: Exchange): void {
    ex.call.record.upstreamEndTime = now();
    this.endExchange(ex);
    if (!ex.upstreamKeeps) this.dropUpstream();
    // A response that came before its request's body was read whole leaves the connection unreadable.
    // Draining since the head went: the client, told nothing, is closed between responses.
    if (this.phase !== Phase.Waiting || !ex.clientKeeps || this.closing()) return this.closeClient();
    this.phase = Phase.Head;
    const held = this.held;
    this.held = undefined;
    this.syncClient();
    if (held) this.fromClient(held, 0);
  }

  private endExchange(ex: Exchange, reset?: { side: 'client' | 'upstream' | 'proxy'; code: number }): void {
    this.ex = undefined;
    ex.inBody = false;
    if (ex.counted) this.upRecord!.active--;
    ex.call.end(reset);
  }

  /** The app's connection closed: between exchanges the next request connects again. */
  private upstreamClosed(): void {
    this.up = undefined;
    this.upBlocked = false;
    this.syncClient();
    const ex = this.ex;
    if (!ex) return;
    if (ex.copy?.whole) return this.retry(ex, ex.copy);
    if (!ex.answered) return this.upstreamFailed(ex, this.upError);
    // A response read until close ends here; any other was cut short, and the client must not take it for whole.
    if (this.resBody.untilClose) return this.responseDone(ex);
    this.endExchange(ex, { side: 'upstream', code: CONNECTION_CLOSED });
    this.client.destroy();
  }

  /**
   * The keep-alive race: the request goes once more, as it was sent, on a new
   * connection, and the client's bytes still to come follow it there. Its call
   * stays the one call; the new connection counts it when it is up.
   */
  private retry(ex: Exchange, copy: RequestCopy): void {
    ex.copy = undefined;
    if (ex.counted) {
      ex.counted = false;
      this.upRecord!.active--;
    }
    this.ctx.retries.retried('connection_closed');
    this.upstream();
    for (const part of copy.take()) this.toUpstream(part);
  }

  /**
   * The app gave no answer the client can read: unreachable, closed without an
   * answer, or a head the parser refused. Answered as forward-h1.ts answers it.
   */
  private upstreamFailed(ex: Exchange, err: (Error & { code?: string }) | undefined): void {
    this.dropUpstream();
    if (ex.answered) {
      // Mid-body: the client's connection is cut, so that a truncated body is not taken for whole.
      this.endExchange(ex, { side: 'upstream', code: CONNECTION_CLOSED });
      return void this.client.destroy();
    }
    const opened = ex.counted;
    const target = this.ctx.config.upstream;
    if (!opened) ex.call.record.upstreamUnreachable = true;
    // Connected, then closed without an answer: perhaps no longer the server it was.
    else this.ctx.protocols.forget(target);
    const why = err instanceof H1Error ? err.message : (err?.code ?? err?.message ?? 'closed');
    this.reply(ex, opened ? GrpcCode.INTERNAL : GrpcCode.UNAVAILABLE, `upstream ${opened ? 'closed the connection' : 'unavailable'}: ${why}`);
  }

  /**
   * The app answered with bytes no HTTP/1.x response starts with: an HTTP/2-only
   * app, whose SETTINGS frame came back. As on the terminating path (forward-h1.ts),
   * the call is answered UNAVAILABLE, which a caller may retry, and the app's
   * HTTP/1.1 callers go to the terminating path from now on, which translates
   * their calls to HTTP/2. This client's connection closes after the answer, so
   * that its next request comes on a connection that goes there.
   */
  private notHttp1(ex: Exchange): void {
    this.dropUpstream();
    this.ctx.protocols.notHttp1(this.ctx.config.upstream);
    this.reply(ex, GrpcCode.UNAVAILABLE, 'the upstream does not speak HTTP/1.1; the next calls go over HTTP/2', false);
  }

  /** --enforce-deadlines: the call's deadline passed. */
  private expire(ex: Exchange): void {
    if (this.ex !== ex) return;
    this.dropUpstream();
    if (!ex.answered) return this.reply(ex, GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    this.endExchange(ex, { side: 'proxy', code: CONNECTION_CLOSED });
    this.client.destroy();
  }

  /** The relay's own answer to the call in flight, which then ends; `keep` false closes the client's connection after it. */
  private reply(ex: Exchange, code: LocalCode, message: string, keep = true): void {
    const r = localReply(ex.detected.protocol, ex.detected.framed, ex.contentType, code, message);
    const { tap } = ex.call;
    tap.responseHeaders(r.status, r.headers);
    if (r.body) tap.responseData(r.body);
    ex.answered = true;
    ex.clientKeeps = keep && ex.req.keepAlive && !this.closing();
    let head = `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? ''}\r\n`;
    for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
    head += `content-length: ${r.body?.length ?? 0}\r\n${this.connectionLine(ex)}\r\n`;
    this.toClient(Buffer.from(head, 'latin1'));
    if (r.body) this.toClient(r.body);
    ex.call.record.upstreamEndTime = now();
    ex.upstreamKeeps = false;
    this.responseDone(ex);
  }

  /** A request the strict parser refused: answered with its status, counted, and never forwarded. */
  private refuse(err: H1Error): void {
    const ex = this.ex;
    this.ctx.log.debug('HTTP/1.1 request refused', { reason: err.reason, error: err.message, peer: this.conn.peer });
    this.ctx.faults.connectionTerminated('bad_request');
    if (ex) {
      // Mid-body: what the app has of it is no request; its connection goes.
      this.dropUpstream();
      if (ex.answered) {
        this.endExchange(ex, { side: 'client', code: CONNECTION_CLOSED });
        return void this.client.destroy();
      }
      ex.call.tap.responseHeaders(err.status, {});
      this.endExchange(ex);
    }
    // RFC 9110 §15.5.6: a 405 (to CONNECT) names the methods that are allowed, as the terminating path's does.
    const allow = err.status === 405 ? `allow: ${ALLOWED_METHODS}\r\n` : '';
    this.toClient(Buffer.from(`HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\n${allow}connection: close\r\ncontent-length: 0\r\n\r\n`, 'latin1'));
    this.closeClient();
  }

  /** The client's connection ends once what was written to it is sent; a client that does not close is cut. */
  private closeClient(): void {
    this.phase = Phase.Closing;
    this.held = undefined;
    this.dropUpstream();
    this.client.end();
    // What the client still sends is read and dropped: closing on unread bytes would reset the connection.
    this.client.resume();
    setTimeout(() => this.client.destroy(), REFUSED_LINGER_MS).unref();
  }

  private clientClosed(): void {
    this.phase = Phase.Closing;
    const ex = this.ex;
    this.dropUpstream();
    if (ex) this.endExchange(ex, { side: 'client', code: CONNECTION_CLOSED });
  }

  /** Lets go of the app's connection: the next request, if any, connects anew. */
  private dropUpstream(): void {
    const up = this.up;
    this.up = undefined;
    this.upBlocked = false;
    up?.destroy();
    if (up) this.syncClient();
  }

  private toUpstream(bytes: Buffer): void {
    if (this.up) this.upWrites.send(this.up, bytes);
  }

  private writeUp(up: net.Socket, bytes: Buffer): void {
    if (up.write(bytes) || this.upBlocked) return;
    this.upBlocked = true;
    this.syncClient();
    up.once('drain', () => {
      if (this.up !== up) return;
      this.upBlocked = false;
      this.syncClient();
    });
  }

  private toClient(bytes: Buffer): void {
    const { client } = this;
    if (client.destroyed || client.write(bytes) || this.clientBlocked) return;
    this.clientBlocked = true;
    this.up?.pause();
    client.once('drain', () => {
      this.clientBlocked = false;
      this.up?.resume();
    });
  }

  /** The client is read while a request is being read and the app takes what it is sent. */
  private syncClient(): void {
    if (this.phase === Phase.Closing) return;
    if (this.phase === Phase.Waiting || this.upBlocked) this.client.pause();
    else this.client.resume();
  }
}
