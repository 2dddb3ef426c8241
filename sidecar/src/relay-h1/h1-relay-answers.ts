// What one relayed client HTTP/1.1 connection (h1-relay-connection.ts) answers
// and ends on its own: the answer the relay gives a call itself, in the call's
// protocol as the terminating path (forward-h1.ts) gives it (past
// --upstream-max-pending, an app unreachable or gone without an answer, an
// HTTP/2-only app, a deadline passed under --enforce-deadlines); the refusal of a
// request the strict parser refused; and the ending of an exchange the app's
// connection left mid-answer. It holds no state: the exchange in flight (its
// shape, H1Exchange, is defined here), the client's socket and the upstream
// connection are the connection's, reached through H1AnswersHost.
import { STATUS_CODES } from 'node:http';
import type { Call } from '../call/call.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { now } from '../clock.ts';
import { RpcscopeError } from '../core/errors.ts';
import { H1Error } from '../h1/h1-error.ts';
import type { RequestHead } from '../h1/message-head.ts';
import type { Detected } from '../protocol/detect.ts';
import { localReply, upstreamLostEnding, type LocalCode } from '../protocol/local-reply.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { ALLOWED_METHODS, CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { queueFull } from '../upstream/endpoint-gate.ts';
import type { RequestCopy } from './h1-relay-replay.ts';

const KEEP_ALIVE_LINE = 'connection: keep-alive\r\n';
const CLOSE_LINE = 'connection: close\r\n';
/** The end of the chunk before it and the last chunk, with no trailer (RFC 9112 §7.1). */
const LAST_CHUNK = Buffer.from('\r\n0\r\n\r\n', 'latin1');

/** The exchange in flight on a relayed client connection: one request and its response. */
export interface H1Exchange {
  readonly call: Call;
  readonly req: RequestHead;
  readonly detected: Detected;
  readonly contentType: string | undefined;
  /** The upstream connection that counts it among its calls, once it is up. */
  countedOn: ConnectionRecord | undefined;
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

/**
 * What the client is told of its connection, where the app's Connection field
 * was dropped: close, or keep-alive (said to HTTP/1.1 clients too, as the
 * terminating path and nginx say it, so that a client reads the same answer on
 * either data plane).
 */
export function connectionLine(ex: H1Exchange): string {
  return ex.clientKeeps ? KEEP_ALIVE_LINE : CLOSE_LINE;
}

/** What the client connection does for its answers. */
export interface H1AnswersHost {
  /** Draining, or past --max-connection-age: the client is asked to close after its response. */
  closing(): boolean;
  /** Writes toward the client, minding its back-pressure. */
  write(bytes: Buffer): void;
  /** The exchange ends (its call with it), `reset` saying by whom when it was cut short. */
  end(ex: H1Exchange, reset?: CallReset): void;
  /** The answer to the exchange is written whole: it ends, and the next request is read, or the client's connection closes. */
  done(ex: H1Exchange): void;
  /** The client's connection ends once what was written to it is sent. */
  close(): void;
  /** The client's connection is cut now, so that a truncated answer is not taken for whole. */
  cut(): void;
  /** The app's connection is closed (or the wait for one left): the next request, if any, connects anew. */
  dropUpstream(): void;
}

export class H1RelayAnswers {
  constructor(
    private readonly ctx: ProxyContext,
    private readonly conn: ConnectionRecord,
    private readonly host: H1AnswersHost,
  ) {}

  /** Past --upstream-max-pending: the call is answered UNAVAILABLE (503), and counted. */
  queueFull(ex: H1Exchange): void {
    const { config, faults } = this.ctx;
    faults.upstreamQueueFull();
    ex.call.record.upstreamBusy = true;
    this.reply(ex, GrpcCode.UNAVAILABLE, queueFull(config.upstream.authority, config.h1Limits).message);
  }

  /**
   * A gRPC-Web or Connect stream the app's connection left between two of its
   * frames, in a chunked body (`betweenChunks`): ended as the terminating path
   * (forward-h1.ts) ends it, with its protocol's UNAVAILABLE status frame as one
   * chunk more and the last chunk, so that the caller reads why rather than a cut
   * connection. The client's connection closes after it. False where that cannot
   * be (a body of declared length, mid-chunk or mid-frame, REST): the connection
   * is to be cut.
   */
  endLost(ex: H1Exchange, betweenChunks: boolean): boolean {
    const { detected, call } = ex;
    if (!betweenChunks || !call.tap.responseAtBoundary()) return false;
    const ending = upstreamLostEnding(detected.protocol, detected.framed, detected.base64, false);
    if (!ending?.body) return false;
    call.record.upstreamEndTime = now();
    call.tap.responseData(ending.body);
    this.host.write(Buffer.concat([Buffer.from(`${ending.body.length.toString(16)}\r\n`, 'latin1'), ending.body, LAST_CHUNK]));
    this.host.end(ex, { side: 'upstream', code: CONNECTION_CLOSED });
    this.host.close();
    return true;
  }

  /**
   * The app gave no answer the client can read: unreachable, closed without an
   * answer, or a head the parser refused. Answered as forward-h1.ts answers it.
   */
  upstreamFailed(ex: H1Exchange, err: (Error & { code?: string }) | undefined): void {
    this.host.dropUpstream();
    if (ex.answered) {
      // Mid-body: the client's connection is cut, so that a truncated body is not taken for whole.
      this.host.end(ex, { side: 'upstream', code: CONNECTION_CLOSED });
      return this.host.cut();
    }
    const opened = ex.countedOn !== undefined;
    const target = this.ctx.config.upstream;
    if (!opened) ex.call.record.upstreamUnreachable = true;
    // Connected, then closed without an answer: perhaps no longer the server it was.
    else this.ctx.protocols.forget(target);
    // rpcscope's own errors say what happened beside their stable code.
    const why = err instanceof H1Error ? err.message : err instanceof RpcscopeError ? `${err.code}: ${err.message}` : (err?.code ?? err?.message ?? 'closed');
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
  notHttp1(ex: H1Exchange): void {
    this.host.dropUpstream();
    this.ctx.protocols.notHttp1(this.ctx.config.upstream);
    this.reply(ex, GrpcCode.UNAVAILABLE, 'the upstream does not speak HTTP/1.1; the next calls go over HTTP/2', false);
  }

  /** --enforce-deadlines: the deadline of the call in flight passed. */
  expire(ex: H1Exchange): void {
    this.host.dropUpstream();
    if (!ex.answered) return this.reply(ex, GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    this.host.end(ex, { side: 'proxy', code: CONNECTION_CLOSED });
    this.host.cut();
  }

  /**
   * A request the strict parser refused: answered with its status, counted, and
   * never forwarded. `ex` is the exchange in flight, if the refusal came in its body.
   */
  refuse(ex: H1Exchange | undefined, err: H1Error): void {
    this.ctx.log.debug('HTTP/1.1 request refused', { reason: err.reason, error: err.message, peer: this.conn.peer });
    this.ctx.faults.connectionTerminated('bad_request');
    if (ex) {
      // Mid-body: what the app has of it is no request; its connection goes.
      this.host.dropUpstream();
      if (ex.answered) {
        this.host.end(ex, { side: 'client', code: CONNECTION_CLOSED });
        return this.host.cut();
      }
      ex.call.tap.responseHeaders(err.status, {});
      this.host.end(ex);
    }
    // RFC 9110 §15.5.6: a 405 (to CONNECT) names the methods that are allowed, as the terminating path's does.
    const allow = err.status === 405 ? `allow: ${ALLOWED_METHODS}\r\n` : '';
    this.host.write(Buffer.from(`HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? ''}\r\n${allow}connection: close\r\ncontent-length: 0\r\n\r\n`, 'latin1'));
    this.host.close();
  }

  /** The relay's own answer to the call in flight, which then ends; `keep` false closes the client's connection after it. */
  private reply(ex: H1Exchange, code: LocalCode, message: string, keep = true): void {
    const r = localReply(ex.detected.protocol, ex.detected.framed, ex.contentType, code, message);
    const { tap } = ex.call;
    tap.responseHeaders(r.status, r.headers);
    if (r.body) tap.responseData(r.body);
    ex.answered = true;
    ex.clientKeeps = keep && ex.req.keepAlive && !this.host.closing();
    let head = `HTTP/1.1 ${r.status} ${STATUS_CODES[r.status] ?? ''}\r\n`;
    for (const [name, value] of Object.entries(r.headers)) head += `${name}: ${value}\r\n`;
    head += `content-length: ${r.body?.length ?? 0}\r\n${connectionLine(ex)}\r\n`;
    this.host.write(Buffer.from(head, 'latin1'));
    if (r.body) this.host.write(r.body);
    ex.call.record.upstreamEndTime = now();
    ex.upstreamKeeps = false;
    this.host.done(ex);
  }
}
