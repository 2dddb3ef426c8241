// One client connection as the listener keeps it: its record, the HTTP/2 session
// node:http2 made on it, and what the listener did to it (refused, aged, cut for a
// flood). The state lives here, beside Node's socket and session, never on them.
import type http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { ConnectionRecord } from '../call/observer.ts';
import { now } from '../clock.ts';
import type { Expiry } from './connection-timeouts.ts';

/** After its 400, 405, 408 or 431, how long a client has to read it before its socket is destroyed. */
const REFUSED_LINGER_MS = 1000;

/** A client that does not read its answer or close must not keep the socket. */
export function destroyAfterLinger(socket: Duplex): void {
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref();
}

/** How the listener asks an HTTP/2 client to go, by the data plane that holds its connection. */
export interface AskToGo {
  /** GOAWAY NO_ERROR on a terminated session: its calls in flight finish. */
  terminated(session: http2.ServerHttp2Session): void;
  /** The relay's GOAWAY, when the relay holds the socket; false when it does not. */
  relayed(socket: net.Socket): boolean;
}

export class ClientConnection {
  readonly record: ConnectionRecord;
  /** The terminating plane's HTTP/2 session on this connection, once node:http2 made it. */
  session: http2.ServerHttp2Session | undefined;
  /** Past --max-connection-age: each HTTP/1.1 response asks its client to close. */
  aged = false;
  /**
   * Answered and closing: nothing more on it is forwarded (HTTP/1.1), or its
   * GOAWAY after a 431 went out and was counted (HTTP/2).
   */
  refused = false;
  /** Cut for a flood: its client is told so once, and it is counted once. */
  cut = false;

  constructor(readonly socket: net.Socket, id: number, h2: boolean, private readonly ask: AskToGo) {
    this.record = {
      id,
      side: 'downstream',
      httpVersion: h2 ? '2' : '1.1',
      peer: `${socket.remoteAddress}:${socket.remotePort}`,
      openTime: now(),
      closeTime: 0,
      calls: 0,
      active: 0,
    };
  }

  /** Asks an HTTP/2 client to go as its plane does: GOAWAY, never a silent close. False when neither plane holds it (HTTP/1.1). */
  private askToGo(): boolean {
    if (!this.session) return this.ask.relayed(this.socket);
    this.ask.terminated(this.session);
    return true;
  }

  /** --request-headers-timeout and --idle-timeout: a 408 to a request begun, else a close. */
  expire(why: Expiry): void {
    if (this.askToGo()) return;
    if (why === 'request_headers_timeout') this.answerAndClose('408 Request Timeout');
    else this.socket.destroy();
  }

  /** --max-connection-age from now, ±10 % so that connections opened together (after a deploy) do not all go at once. */
  ageAfter(ageMs: number, graceMs: number): void {
    const timer = setTimeout(() => this.ageOut(graceMs), ageMs * (0.9 + 0.2 * Math.random()));
    timer.unref();
    this.socket.once('close', () => clearTimeout(timer));
  }

  /**
   * HTTP/2 clients get GOAWAY and reconnect (through kube-proxy, likely to
   * another pod) while their calls in flight finish; HTTP/1.1 clients are asked
   * to close after their current response. Whatever is still open after the
   * grace period is closed.
   */
  private ageOut(graceMs: number): void {
    this.aged = true;
    const session = this.session;
    if (!this.askToGo() && this.record.active === 0) this.socket.end();
    const grace = setTimeout(() => (session ? session.destroy() : this.socket.destroy()), graceMs);
    grace.unref();
    this.socket.once('close', () => clearTimeout(grace));
  }

  /** Answers an HTTP/1.1 request the proxy will not forward, and closes the connection. */
  answerAndClose(status: string, headers = ''): void {
    this.refused = true;
    if (!this.socket.writable) return void this.socket.destroy();
    this.socket.end(`HTTP/1.1 ${status}\r\n${headers}connection: close\r\ncontent-length: 0\r\n\r\n`);
    destroyAfterLinger(this.socket);
  }
}
