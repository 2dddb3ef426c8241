// The proxy's listening port: one TCP (or TLS) listener whose connections are
// handed to an HTTP/1.1 or an HTTP/2 server — by the first bytes in cleartext, by
// ALPN under TLS — so that every client finds the sidecar on one port.
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { HostPort } from '../config/parse-value.ts';
import type { ConnectionRecord } from '../observe/observer.ts';
import type { ProxyContext } from '../proxy/context.ts';
import { now } from '../proxy/call.ts';
import type { Forwarders } from '../proxy/forwarders.ts';
import { noopTracing } from '../observe/call-tracing.ts';
import { relayApplies } from '../relay/relay-applies.ts';
import { RelaySet } from '../relay/relay-set.ts';
import { ResetBudget } from './reset-budget.ts';
import { sniffHttpVersion } from './sniff.ts';

const CONN = Symbol('rpcscope.downstreamConnection');
const SESSION = Symbol('rpcscope.session');
const AGED = Symbol('rpcscope.aged');
type Tracked = { [CONN]?: ConnectionRecord; [SESSION]?: http2.ServerHttp2Session; [AGED]?: boolean };

const ignore = (): void => {};
const H2_SETTINGS: http2.Settings = { initialWindowSize: 4 * 1024 * 1024, enablePush: false };
const SESSION_WINDOW = 16 * 1024 * 1024;

export class ProxyListener {
  private readonly server: net.Server;
  private readonly h1: http.Server;
  private readonly h2: http2.Http2Server;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  /**
   * HTTP/1.1 connections. `h1` never listens (sockets reach it by emit('connection')),
   * and Node sets up the tracking behind closeIdleConnections()/closeAllConnections()
   * only on 'listening': those calls would close nothing and leave keep-alive clients
   * holding the drain open until keepAliveTimeout.
   */
  private readonly h1Sockets = new Set<net.Socket>();
  private draining = false;
  /** HTTP/2 connections relayed frame by frame (--data-plane relay), when the relay applies. */
  private readonly relays: RelaySet | undefined;

  constructor(private readonly ctx: ProxyContext, private readonly nextConnId: () => number, private readonly forward: Forwarders) {
    // Streams and long polls may last hours: no request timeout of our own.
    this.h1 = http.createServer({ requestTimeout: 0, keepAliveTimeout: 65_000 });
    this.h1.on('request', (req, res) => this.onRequest(req, res));
    this.h1.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.h1.on('clientError', (err: Error & { code?: string }, socket) => {
      ctx.log.debug('bad HTTP/1.1 request', { error: err.code ?? err.message });
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n');
      else socket.destroy();
    });

    this.relays = relayApplies(ctx.config, ctx.tracing !== noopTracing) ? new RelaySet(ctx, nextConnId) : undefined;
    this.h2 = http2.createServer({ settings: H2_SETTINGS });
    // Streams are taken from each session's own 'stream' event (trackSession), not
    // the server's: a stream may be emitted after its session was destroyed, when
    // only the session's closure still knows which connection it came on.
    this.h2.on('session', (session) => this.contain(() => this.trackSession(session), () => session.destroy()));

    const { tlsCert, tlsKey } = ctx.config;
    if (tlsCert && tlsKey) {
      this.server = tls.createServer({ cert: readFileSync(tlsCert), key: readFileSync(tlsKey), ALPNProtocols: ['h2', 'http/1.1'] });
      this.server.on('secureConnection', (socket: tls.TLSSocket) => this.contain(() => this.hand(socket, socket.alpnProtocol === 'h2'), () => socket.destroy()));
      this.server.on('tlsClientError', (err) => ctx.log.debug('TLS handshake failed', { error: err.message }));
    } else {
      this.server = net.createServer((socket) => sniffHttpVersion(socket, (h2) => this.contain(() => this.hand(socket, h2), () => socket.destroy())));
    }
  }

  /** Runs one connection's handling; a fault in it ends that connection (`abandon`), never the process. */
  private contain(run: () => void, abandon: () => void): void {
    try {
      run();
    } catch (err) {
      this.ctx.faults.internalError('listener', err);
      try {
        abandon();
      } catch {
        // Already counted; whatever is left of the connection closes with its socket.
      }
    }
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const conn = this.connectionOf(req.socket);
    try {
      if (!conn) throw new Error('HTTP/1.1 request on an untracked connection');
      // A response asks its client to close the connection while draining, or once the connection is past its age.
      this.forward.h1(this.ctx, conn, req, res, () => this.draining || (req.socket as Tracked)[AGED] === true);
    } catch (err) {
      this.ctx.faults.internalError(conn ? 'forward_h1' : 'listener', err);
      // The caller gets an answer it can read as the proxy's failure; with the response already under way, a cut.
      if (res.headersSent) res.destroy();
      else res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('rpcscope: internal error\n');
    }
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const conn = this.connectionOf(req.socket);
    try {
      if (!conn) throw new Error('HTTP/1.1 upgrade on an untracked connection');
      this.forward.upgrade(this.ctx, conn, req, socket, head);
    } catch (err) {
      this.ctx.faults.internalError(conn ? 'forward_upgrade' : 'listener', err);
      socket.destroy();
    }
  }

  private onStream(conn: ConnectionRecord, onClientReset: () => void, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    try {
      this.forward.h2(this.ctx, conn, stream, headers, onClientReset);
    } catch (err) {
      this.ctx.faults.internalError('forward_h2', err);
      // A gRPC caller reads RST_STREAM INTERNAL_ERROR as status INTERNAL. The reset
      // also surfaces as the stream's 'error', which must have a listener: an unheard
      // one would end the process after all.
      stream.on('error', ignore);
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    }
  }

  private cutFlood(session: http2.ServerHttp2Session): void {
    this.ctx.faults.connectionTerminated('reset_flood');
    this.ctx.observer.goaway('proxy', http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    this.ctx.log.warn('client connection cut: streams reset faster than the budget (rapid reset)', { peer: `${session.socket?.remoteAddress}:${session.socket?.remotePort}` });
    // GOAWAY first: destroy(err, code) alone goes out as NO_ERROR, and the client must
    // read that it was told to calm down. Then the streams in flight end with the connection.
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.destroy();
  }

  listen(at: HostPort): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(at.port, at.host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  private connectionOf(socket: unknown): ConnectionRecord | undefined {
    return socket ? (socket as Tracked)[CONN] : undefined;
  }

  private hand(socket: net.Socket, h2: boolean): void {
    const conn: ConnectionRecord = {
      id: this.nextConnId(),
      side: 'downstream',
      httpVersion: h2 ? '2' : '1.1',
      peer: `${socket.remoteAddress}:${socket.remotePort}`,
      openTime: now(),
      closeTime: 0,
      calls: 0,
      active: 0,
    };
    (socket as Tracked)[CONN] = conn;
    socket.on('error', () => {});
    this.ctx.observer.connectionOpened(conn);
    socket.once('close', () => {
      conn.closeTime = now();
      this.ctx.observer.connectionClosed(conn);
    });
    const ageMs = this.ctx.config.maxConnectionAgeMs;
    if (ageMs > 0) {
      // ±10 % jitter, so connections opened together (after a deploy) do not all go at once.
      const timer = setTimeout(() => this.ageOut(socket, conn), ageMs * (0.9 + 0.2 * Math.random()));
      timer.unref();
      socket.once('close', () => clearTimeout(timer));
    }
    if (h2 && this.relays) {
      this.relays.add(socket, conn);
    } else if (h2) {
      this.h2.emit('connection', socket);
    } else {
      this.h1Sockets.add(socket);
      socket.once('close', () => this.h1Sockets.delete(socket));
      this.h1.emit('connection', socket);
      socket.resume();
    }
  }

  /**
   * --max-connection-age: HTTP/2 clients get GOAWAY and reconnect (through
   * kube-proxy, likely to another pod) while their calls in flight finish;
   * HTTP/1.1 clients are asked to close after their current response. Whatever
   * is still open after the grace period is closed.
   */
  private ageOut(socket: net.Socket, conn: ConnectionRecord): void {
    const tracked = socket as Tracked;
    tracked[AGED] = true;
    const session = tracked[SESSION];
    if (session) this.goaway(session);
    else if (!this.relays?.ageOut(socket) && conn.active === 0) socket.end();
    const grace = setTimeout(() => (session ? session.destroy() : socket.destroy()), this.ctx.config.maxConnectionAgeGraceMs);
    grace.unref();
    socket.once('close', () => clearTimeout(grace));
  }

  private trackSession(session: http2.ServerHttp2Session): void {
    const socket = session.socket as (net.Socket & Tracked) | undefined;
    const conn = this.connectionOf(socket);
    if (!socket || !conn) throw new Error('HTTP/2 session on an untracked connection');
    this.sessions.add(session);
    socket[SESSION] = session;
    // Streams the client resets before their answer, faster than the budget allows:
    // a rapid-reset flood, whose connection is cut. Such a stream may arrive after its
    // session is gone; the forwarder then counts it as the client's reset and sends
    // nothing upstream.
    const budget = new ResetBudget(Date.now);
    const onClientReset = (): void => {
      if (!budget.spend() && !session.destroyed) this.cutFlood(session);
    };
    session.on('stream', (stream, headers) => this.onStream(conn, onClientReset, stream, headers));
    session.on('error', (err: Error & { code?: string }) => {
      // Node's HTTP/2 layer gave up on the session (nghttp2's reset limit, bad frames);
      // a socket error is only the client going away.
      if (err.code?.startsWith('ERR_HTTP2_') && err.code !== 'ERR_HTTP2_SESSION_ERROR') this.ctx.faults.connectionTerminated('protocol_error');
    });
    session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
    session.on('goaway', (code) => this.ctx.observer.goaway('client', code));
    session.once('close', () => this.sessions.delete(session));
    if (this.draining) this.goaway(session);
  }

  private goaway(session: http2.ServerHttp2Session): void {
    if (session.closed || session.destroyed) return;
    this.ctx.observer.goaway('proxy', http2.constants.NGHTTP2_NO_ERROR);
    // close() sends GOAWAY and lets the streams in flight finish.
    session.close();
  }

  /** Stop accepting; ask HTTP/2 clients to go (GOAWAY) and HTTP/1.1 clients to close. */
  drain(): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of this.sessions) this.goaway(session);
    this.relays?.drain();
    // Idle keep-alive connections go now; busy ones are asked to close with their response.
    for (const socket of this.h1Sockets) if (this.connectionOf(socket)?.active === 0) socket.destroy();
    return closed;
  }

  /** End whatever is still open (after the drain timeout). */
  destroy(): void {
    for (const session of this.sessions) session.destroy();
    this.relays?.destroy();
    for (const socket of this.h1Sockets) socket.destroy();
    this.server.close();
  }
}
