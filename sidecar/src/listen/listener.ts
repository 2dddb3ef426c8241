// The proxy's listening port: one TCP (or TLS) listener whose connections are
// handed to an HTTP/1.1 or an HTTP/2 server — by the first bytes in cleartext, by
// ALPN under TLS — so that every client finds the sidecar on one port.
import http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import type tls from 'node:tls';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { HostPort } from '../config/parse-value.ts';
import type { TerminationReason } from '../call/faults.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { Forwarders } from '../proxy/forwarders.ts';
import { abandonH1, abandonH2 } from '../proxy/call-guard.ts';
import { now } from '../clock.ts';
import { ConnectionTimeouts, type Expiry } from './connection-timeouts.ts';
import { ClientConnection, destroyAfterLinger, type AskToGo } from './client-connection.ts';
import { H1RelaySet } from '../relay-h1/h1-relay-set.ts';
import { ResetBudget } from '../h2/reset-budget.ts';
import { CONTROL_FRAME_BUDGETS, ControlFrameBudget } from '../h2/control-frame-budget.ts';
import { sniffHttpVersion } from './sniff.ts';
import { GOAWAY_FOR_NGHTTP2_ERROR } from './nghttp2-errors.ts';
import { goawayFrame } from '../h2/frames.ts';
import { keepNodeSessionAlive } from '../h2/h2-keepalive.ts';
import { MAX_HEADER_LIST_PAIRS, MAX_HEADER_LIST_SIZE, headerListSize } from '../h2/header-list-size.ts';
import { nodeHttp2, nodeTls } from '../builtins.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { ALLOWED_METHODS } from '../protocol/vocabulary.ts';
import { NodeErrorCode } from '../core/errors.ts';

const ignore = (): void => {};
/**
 * maxConcurrentStreams: Node advertises no limit by default; streams past this one
 * are refused by nghttp2 with RST_STREAM REFUSED_STREAM, which a client may retry
 * (RFC 9113 §5.1.2). 1000 is four times Go's default and far above a gRPC
 * client's use of one connection.
 */
const H2_SETTINGS: http2.Settings = { initialWindowSize: 4 * 1024 * 1024, enablePush: false, maxConcurrentStreams: 1000 };
/**
 * Errors nghttp2 ends a session with (`errno` of Node's ERR_HTTP2_ERROR, from
 * nghttp2.h), by the reason the connection is counted under.
 */
const NGHTTP2_SESSION_ERRORS = new Map<number, TerminationReason>([
  [-904, 'control_frame_flood'], // NGHTTP2_ERR_FLOODED
  [-905, 'continuation_flood'], // NGHTTP2_ERR_TOO_MANY_CONTINUATIONS (nghttp2 1.61: more than 8)
]);
/**
 * NGHTTP2_ERR_PROTO: among others, a HEADERS frame opening a stream past the
 * SETTINGS_MAX_CONCURRENT_STREAMS the client acknowledged (RFC 9113 §5.1.2).
 */
const NGHTTP2_ERR_PROTO = -505;
/**
 * The GOAWAY code a client is told, by why nghttp2 gave up on its session. Node
 * sends INTERNAL_ERROR for all of them, which reads as the sidecar's own fault;
 * RFC 9113 §5.4.1 gives ENHANCE_YOUR_CALM to a peer generating excessive load and
 * §5.1.2 PROTOCOL_ERROR to a stream past the acknowledged limit.
 */
const GOAWAY_FOR: Partial<Record<TerminationReason, number>> = {
  control_frame_flood: Http2Error.ENHANCE_YOUR_CALM,
  continuation_flood: Http2Error.ENHANCE_YOUR_CALM,
  empty_frame_flood: Http2Error.ENHANCE_YOUR_CALM,
  stream_limit: Http2Error.PROTOCOL_ERROR,
};
const SESSION_WINDOW = 16 * 1024 * 1024;
/** RFC 9110 §15.5.6: a 405 names the methods that are allowed. */
const NOT_A_TUNNEL = `allow: ${ALLOWED_METHODS}\r\n`;
/** Connections closed past --max-connections are logged at most once per this interval, with the count since. */
const OVER_LIMIT_LOG_MS = 10_000;

/** The settings the listener reads, picked out of Config by the pipeline. */
export interface ListenSettings {
  readonly tlsCert: string | undefined;
  readonly tlsKey: string | undefined;
  readonly maxConnections: number;
  readonly firstByteTimeoutMs: number;
  readonly requestHeadersTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly maxConnectionAgeMs: number;
  readonly maxConnectionAgeGraceMs: number;
  /** Where HTTP/2 connections go when a relay applies (relay/relay-applies.ts, relay-balanced/balanced-applies.ts); undefined: node:http2. */
  readonly relays: H2Relays | undefined;
  /** Whether HTTP/1.1 connections may go to the HTTP/1.1 relay (relay-h1/h1-relay-applies.ts); H1RelaySet decides each one. */
  readonly http1Relay: boolean;
}

/** The HTTP/2 relay a listener hands connections to (relay/relay-set.ts, relay-balanced/balanced-relay-set.ts), built by the composition root. */
export interface H2Relays {
  /** Takes `socket`, or has `terminate` hand it to node:http2. */
  add(socket: net.Socket, conn: ConnectionRecord, terminate: () => void): void;
  /** Whether `socket` is relayed; if so, it is asked to go. */
  ageOut(socket: net.Socket): boolean;
  drain(): void;
  /**
   * Relayed connections not yet closed by the relay: after the first GOAWAY of a
   * drain a client may still open streams until the second, so a drain whose
   * calls are all over waits for these too (or its timeout) before it ends them.
   */
  readonly settling: number;
  destroy(): void;
}

export class ProxyListener {
  private readonly server: net.Server;
  private readonly h1: http.Server;
  /** The terminating HTTP/2 server, made when the first connection needs it (node:http2 loads then: see builtins.ts). */
  private h2Server: http2.Http2Server | undefined;
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  /** Each client connection by its socket: what the listener keeps of it, off Node's own objects. */
  private readonly clients = new WeakMap<Duplex, ClientConnection>();
  /**
   * The connection node:http2 is taking: it makes the session as it takes the
   * socket, within emit('connection'), and the session's socket is a stand-in
   * for the socket, never the socket itself.
   */
  private arriving: ClientConnection | undefined;
  private readonly askToGo: AskToGo = {
    terminated: (session) => this.goaway(session),
    relayed: (socket) => this.relays?.ageOut(socket) ?? false,
  };
  /**
   * HTTP/1.1 connections. `h1` never listens (sockets reach it by emit('connection')),
   * and Node sets up the tracking behind closeIdleConnections()/closeAllConnections()
   * only on 'listening': those calls would close nothing and leave keep-alive clients
   * holding the drain open until keepAliveTimeout.
   */
  private readonly h1Clients = new Set<ClientConnection>();
  private draining = false;
  private readonly timeouts: ConnectionTimeouts;
  /** HTTP/2 connections relayed frame by frame (--data-plane relay), when the relay applies. */
  private readonly relays: H2Relays | undefined;
  /** HTTP/1.1 connections relayed to one upstream connection each (--http1-data-plane relay). */
  private readonly h1Relays: H1RelaySet | undefined;
  /** When a connection closed past --max-connections was last logged, and how many were closed since without a line. */
  private overLimitLoggedAt = -Infinity;
  private overLimitUnlogged = 0;

  constructor(private readonly ctx: ProxyContext, private readonly settings: ListenSettings, private readonly forward: Forwarders) {
    const { firstByteTimeoutMs, requestHeadersTimeoutMs, idleTimeoutMs } = settings;
    this.timeouts = new ConnectionTimeouts(requestHeadersTimeoutMs, idleTimeoutMs);
    // Streams and long polls may last hours: no request timeout. Node's headers
    // timeout runs only on a server that listens itself, which `h1` does not, and its
    // keep-alive timeout would cut idle connections before --idle-timeout: both are
    // ConnectionTimeouts' job.
    this.h1 = http.createServer({ requestTimeout: 0, keepAliveTimeout: 0 });
    this.h1.on('request', (req, res) => this.onRequest(req, res));
    this.h1.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    // Whatever llhttp refuses (smuggling shapes: Content-Length with Transfer-Encoding,
    // differing Content-Lengths, obs-fold, bare LF; oversized heads) never reaches the forwarder.
    this.h1.on('clientError', (err: Error & { code?: string }, socket) => {
      // Socket errors (a reset) come here too: that client only went away.
      if (!err.code?.startsWith('HPE_')) return void socket.destroy();
      ctx.log.debug('bad HTTP/1.1 request', { error: err.code });
      this.refuse(socket, err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request');
    });
    this.h1.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
      ctx.log.debug('HTTP/1.1 CONNECT refused', { target: req.url });
      this.refuse(socket, '405 Method Not Allowed', NOT_A_TUNNEL);
    });

    this.relays = settings.relays;
    this.h1Relays = settings.http1Relay ? new H1RelaySet(ctx) : undefined;

    const { tlsCert, tlsKey } = settings;
    if (tlsCert && tlsKey) {
      this.server = nodeTls().createServer({
        noDelay: true,
        cert: readFileSync(tlsCert),
        key: readFileSync(tlsKey),
        ALPNProtocols: ['h2', 'http/1.1'],
        ...(firstByteTimeoutMs > 0 ? { handshakeTimeout: firstByteTimeoutMs } : {}),
      });
      this.server.on('secureConnection', (socket: tls.TLSSocket) => this.contain(() => this.hand(socket, socket.alpnProtocol === 'h2'), () => socket.destroy()));
      this.server.on('tlsClientError', (err: Error & { code?: string }) => {
        if (err.code === NodeErrorCode.TLS_HANDSHAKE_TIMEOUT) ctx.faults.connectionTerminated('first_byte_timeout');
        ctx.log.debug('TLS handshake failed', { error: err.message });
      });
    } else {
      const timedOut = (): void => ctx.faults.connectionTerminated('first_byte_timeout');
      // noDelay on both servers: an HTTP/1.1 answer goes out as head then body, and with Nagle's
      // algorithm the body waits for the client's delayed ACK, ~40 ms on every keep-alive call.
      this.server = net.createServer({ noDelay: true }, (socket) =>
        sniffHttpVersion(socket, (h2) => this.contain(() => this.hand(socket, h2), () => socket.destroy()), firstByteTimeoutMs, timedOut, () => this.wrongPreface(socket)),
      );
    }
    // --max-connections: past it Node closes a new connection as it accepts it, before
    // reading a byte or making anything for it (net.Server's maxConnections, which
    // counts TCP connections under TLS too), and tells of it with 'drop'. Without it
    // Node accepts until the process runs out of file descriptors or memory.
    if (settings.maxConnections > 0) {
      this.server.maxConnections = settings.maxConnections;
      this.server.on('drop', () => this.overLimit());
    }
  }

  private h2(): http2.Http2Server {
    if (this.h2Server) return this.h2Server;
    const h2 = nodeHttp2().createServer({ settings: H2_SETTINGS, maxHeaderListPairs: MAX_HEADER_LIST_PAIRS });
    // Streams are taken from each session's own 'stream' event (trackSession), not
    // the server's: a stream may be emitted after its session was destroyed, when
    // only the session's closure still knows which connection it came on.
    h2.on('session', (session) => {
      const client = this.arriving;
      this.contain(() => this.trackSession(session, client), () => session.destroy());
    });
    return (this.h2Server = h2);
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

  /** A connection came past --max-connections and was closed unread: counted, and logged now and then. */
  private overLimit(): void {
    this.ctx.faults.connectionOverLimit();
    const t = Date.now();
    if (t - this.overLimitLoggedAt < OVER_LIMIT_LOG_MS) {
      this.overLimitUnlogged++;
      return;
    }
    this.ctx.log.warn('client connection closed unread: --max-connections are open', {
      maxConnections: this.settings.maxConnections,
      ...(this.overLimitUnlogged > 0 ? { alsoSinceLastLog: this.overLimitUnlogged } : {}),
    });
    this.overLimitLoggedAt = t;
    this.overLimitUnlogged = 0;
  }

  /** Answers a request the proxy will not forward, and closes its connection. */
  private refuse(socket: Duplex, status: string, headers = ''): void {
    const client = this.clients.get(socket);
    // llhttp may report more than one error for the bytes that follow the first.
    // Every socket node:http sees came through hand(): one it did not is only closed.
    if (!client || client.refused) return void socket.destroy();
    this.ctx.faults.connectionTerminated('bad_request');
    client.answerAndClose(status, headers);
  }

  /**
   * An HTTP/2 client's invalid connection preface (RFC 9113 §3.4): a connection
   * error PROTOCOL_ERROR, on both data planes. Its GOAWAY, which §3.4 lets an
   * endpoint omit, tells the client why; then the connection closes.
   */
  private wrongPreface(socket: net.Socket): void {
    this.ctx.faults.connectionTerminated('protocol_error');
    this.ctx.observer.goaway('proxy', Http2Error.PROTOCOL_ERROR);
    this.ctx.log.debug('invalid HTTP/2 connection preface; connection closed', { peer: `${socket.remoteAddress}:${socket.remotePort}` });
    socket.end(goawayFrame(0, Http2Error.PROTOCOL_ERROR));
    // What the client still sends is read and dropped: closing on unread bytes would reset the connection, GOAWAY and all.
    socket.resume();
    destroyAfterLinger(socket);
  }

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    const client = this.clients.get(req.socket);
    if (client?.refused) {
      req.socket.destroy();
      return;
    }
    // RFC 9112 §3.2: origin-form, or `OPTIONS *`. The absolute-form is what a forward
    // proxy is sent; rpcscope forwards only to its configured upstream, so a client
    // asking for another server by URI is told no rather than sent somewhere else.
    const target = req.url ?? '';
    if (target[0] !== '/' && !(target === '*' && req.method === 'OPTIONS')) {
      this.ctx.log.debug('HTTP/1.1 request target refused', { target });
      this.refuse(req.socket, '400 Bad Request');
      return;
    }
    try {
      if (!client) throw new Error('HTTP/1.1 request on an untracked connection');
      // A response asks its client to close the connection while draining, or once the connection is past its age.
      this.forward.h1(this.ctx, client.record, req, res, () => this.draining || client.aged);
    } catch (err) {
      this.ctx.faults.internalError(client ? 'forward_h1' : 'listener', err);
      // The caller gets an answer it can read as the proxy's failure; with the response already under way, a cut.
      abandonH1(res);
    }
  }

  private onUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const client = this.clients.get(req.socket);
    try {
      if (!client) throw new Error('HTTP/1.1 upgrade on an untracked connection');
      this.forward.upgrade(this.ctx, client.record, req, socket, head);
    } catch (err) {
      this.ctx.faults.internalError(client ? 'forward_upgrade' : 'listener', err);
      socket.destroy();
    }
  }

  private onStream(client: ClientConnection, onClientReset: () => void, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, rawHeaders?: string[]): void {
    // A CONNECT stream asks for a tunnel (RFC 9113 §8.5; extended CONNECT is not
    // advertised), which a proxy bound to one upstream does not open.
    if (headers[':method'] === 'CONNECT') {
      stream.on('error', ignore);
      stream.respond({ ':status': 405, allow: ALLOWED_METHODS }, { endStream: true });
      return;
    }
    // String lengths count UTF-16 units, not octets; Node hands over field bytes as latin1, one unit each.
    if (headerListSize(headers, rawHeaders) > MAX_HEADER_LIST_SIZE) {
      this.refuseOversizedHeaders(client, stream);
      return;
    }
    try {
      this.forward.h2(this.ctx, client.record, stream, headers, onClientReset, rawHeaders);
    } catch (err) {
      this.ctx.faults.internalError('forward_h2', err);
      // A gRPC caller reads RST_STREAM INTERNAL_ERROR as status INTERNAL. The reset
      // also surfaces as the stream's 'error', which must have a listener: an unheard
      // one would end the process after all.
      stream.on('error', ignore);
      abandonH2(stream);
    }
  }

  /**
   * A request whose header list is over the advertised size: answered 431 and never
   * forwarded; as for HTTP/1.1, its connection is closed, but gracefully (GOAWAY
   * NO_ERROR), so that the other calls on it finish.
   */
  private refuseOversizedHeaders(client: ClientConnection, stream: http2.ServerHttp2Stream): void {
    const session = stream.session;
    stream.on('error', ignore);
    this.ctx.log.debug('HTTP/2 request headers over the header list size refused', { max: MAX_HEADER_LIST_SIZE });
    stream.respond({ ':status': 431, 'content-type': 'text/plain; charset=utf-8' });
    stream.end(`rpcscope: request header list over ${MAX_HEADER_LIST_SIZE} octets\n`);
    // Counted once per connection, however many of its streams were over.
    if (!session || client.refused) return;
    client.refused = true;
    this.ctx.faults.connectionTerminated('bad_request');
    this.goaway(session);
  }

  private cutFlood(client: ClientConnection, session: http2.ServerHttp2Session, reason: 'reset_flood' | 'ping_flood' | 'settings_flood'): void {
    if (session.destroyed || client.cut) return;
    this.ctx.faults.connectionTerminated(reason);
    this.ctx.observer.goaway('proxy', Http2Error.ENHANCE_YOUR_CALM);
    const what = reason === 'reset_flood' ? 'streams reset faster than the budget (rapid reset)' : `${reason === 'ping_flood' ? 'PING' : 'SETTINGS'} frames sent faster than the budget`;
    this.ctx.log.warn(`client connection cut: ${what}`, { peer: `${session.socket?.remoteAddress}:${session.socket?.remotePort}` });
    // GOAWAY first: destroy(err, code) alone goes out as NO_ERROR, and the client must
    // read that it was told to calm down. Then at once, from within the frame's event:
    // left open, nghttp2 would go on through the rest of the flood in the same read
    // and end the session itself, dropping the GOAWAY. The streams in flight end with it.
    client.cut = true;
    session.goaway(Http2Error.ENHANCE_YOUR_CALM);
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

  private hand(socket: net.Socket, h2: boolean): void {
    const client = new ClientConnection(socket, this.ctx.nextConnId(), h2, this.askToGo);
    const conn = client.record;
    this.clients.set(socket, client);
    socket.on('error', () => {});
    // The kernel probes a quiet client socket (HTTP/1.1 keep-alive, relayed HTTP/2): a backstop under the
    // PINGs, and the only check an idle HTTP/1.1 client gets. How soon it gives up is the pod's
    // net.ipv4.tcp_keepalive_intvl and _probes.
    if (this.settings.keepaliveIntervalMs > 0) socket.setKeepAlive(true, this.settings.keepaliveIntervalMs);
    this.ctx.observer.connectionOpened(conn);
    const unwatch = this.timeouts.watch({ conn, bytesRead: h2 ? undefined : () => socket.bytesRead, expire: (why) => this.expire(client, why) });
    socket.once('close', () => {
      unwatch();
      conn.closeTime = now();
      this.ctx.observer.connectionClosed(conn);
    });
    if (this.settings.maxConnectionAgeMs > 0) client.ageAfter(this.settings.maxConnectionAgeMs, this.settings.maxConnectionAgeGraceMs);
    if (h2 && this.relays) {
      this.relays.add(socket, conn, () => this.terminateH2(client));
    } else if (h2) {
      this.terminateH2(client);
    } else if (this.h1Relays) {
      // A response asks its client to close the connection while draining, or once the connection is past its age.
      this.h1Relays.add(socket, conn, () => this.draining || client.aged, () => this.terminateH1(client));
    } else {
      this.terminateH1(client);
    }
  }

  /** Hands an HTTP/1.1 connection to node:http. */
  private terminateH1(client: ClientConnection): void {
    const { socket } = client;
    this.h1Clients.add(client);
    socket.once('close', () => this.h1Clients.delete(client));
    this.h1.emit('connection', socket);
    socket.resume();
  }

  /** Hands an HTTP/2 connection to node:http2, whose 'session' (trackSession) comes before this returns. */
  private terminateH2(client: ClientConnection): void {
    this.arriving = client;
    try {
      this.h2().emit('connection', client.socket);
    } finally {
      this.arriving = undefined;
    }
  }

  /** --request-headers-timeout and --idle-timeout: the connection held a slot and did nothing with it. */
  private expire(client: ClientConnection, why: Expiry): void {
    const { socket } = client;
    this.ctx.faults.connectionTerminated(why);
    this.ctx.log.debug('client connection closed', { reason: why, peer: `${socket.remoteAddress}:${socket.remotePort}` });
    client.expire(why);
  }

  private trackSession(session: http2.ServerHttp2Session, client: ClientConnection | undefined): void {
    if (!client) throw new Error('HTTP/2 session on an untracked connection');
    const conn = client.record;
    this.sessions.add(session);
    client.session = session;
    // Streams the client resets before their answer, faster than the budget allows:
    // a rapid-reset flood, whose connection is cut. Such a stream may arrive after its
    // session is gone; the forwarder then counts it as the client's reset and sends
    // nothing upstream.
    const budget = new ResetBudget(Date.now);
    const onClientReset = (): void => {
      if (!budget.spend()) this.cutFlood(client, session, 'reset_flood');
    };
    // Streams open, for telling a stream over the acknowledged limit from other protocol errors.
    let open = 0;
    // The fourth argument, raw fields (left out of Node's type definitions), keeps repeated fields apart.
    session.on('stream', (stream, headers, _flags, rawHeaders?: string[]) => {
      open++;
      stream.once('close', () => open--);
      this.onStream(client, onClientReset, stream, headers, rawHeaders);
    });
    const endedFor = this.tellWhyEnded(session, () => !session.pendingSettingsAck && open >= (session.localSettings.maxConcurrentStreams ?? Infinity));
    // Each PING and SETTINGS is owed an ACK: a client sending them faster than its
    // budget is cut before nghttp2's own limit, and told why.
    const pings = new ControlFrameBudget(CONTROL_FRAME_BUDGETS.ping, Date.now);
    const settings = new ControlFrameBudget(CONTROL_FRAME_BUDGETS.settings, Date.now);
    session.on('ping', () => {
      if (!pings.spend()) this.cutFlood(client, session, 'ping_flood');
    });
    session.on('remoteSettings', () => {
      if (!settings.spend()) this.cutFlood(client, session, 'settings_flood');
    });
    session.on('error', (err: Error & { code?: string; errno?: number }) => {
      // Node's HTTP/2 layer gave up on the session (nghttp2's flood and reset limits, bad
      // frames); a socket error is only the client going away.
      // A session already cut for a flood may hit nghttp2's limits while its GOAWAY is written: counted once.
      if (!err.code?.startsWith('ERR_HTTP2_') || err.code === NodeErrorCode.HTTP2_SESSION_ERROR || client.cut) return;
      const reason = endedFor() ?? 'protocol_error';
      this.ctx.faults.connectionTerminated(reason);
      if (reason !== 'protocol_error') this.ctx.log.warn('client connection cut by the HTTP/2 layer', { reason, peer: conn.peer });
      else this.ctx.log.debug('client connection ended by the HTTP/2 layer', { error: err.message, code: err.code, errno: err.errno, peer: conn.peer });
    });
    session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW));
    const firstByteMs = this.settings.firstByteTimeoutMs;
    if (firstByteMs > 0) {
      // Over TLS nothing has checked the preface yet; in cleartext the SETTINGS after it.
      const timer = setTimeout(() => {
        this.ctx.faults.connectionTerminated('first_byte_timeout');
        session.destroy();
      }, firstByteMs);
      timer.unref();
      session.once('remoteSettings', () => clearTimeout(timer));
      session.once('close', () => clearTimeout(timer));
    }
    session.on('goaway', (code) => this.ctx.observer.goaway('client', code));
    session.once('close', () => this.sessions.delete(session));
    // A client that vanished without FIN or RST (its node died, the network partitioned) answers no PING:
    // its session is destroyed, its calls in flight cancelled upstream, and its connection leaves the gauges.
    const { keepaliveIntervalMs: intervalMs, keepaliveTimeoutMs: timeoutMs } = this.settings;
    keepNodeSessionAlive(session, { intervalMs, timeoutMs }, () => {
      this.ctx.faults.connectionTerminated('keepalive_timeout');
      this.ctx.faults.keepaliveTimedOut('downstream');
      this.ctx.log.info('client connection closed: no answer to PING within --keepalive-timeout', { peer: conn.peer, timeoutMs });
      session.destroy();
    });
    if (this.draining) this.goaway(session);
  }

  /**
   * Node ends a session nghttp2 gave up on through the session's public destroy(error),
   * with GOAWAY INTERNAL_ERROR unless given a code: the session's own destroy passes
   * the code that says why (GOAWAY_FOR), and notes the reason it is counted under,
   * which it returns.
   *
   * Node gives no hook for this but the method itself: its HTTP/2 core calls the
   * session's destroy(error) from nghttp2's error callback (onSessionInternalError in
   * lib/internal/http2/core.js, with ERR_HTTP2_ERROR or ERR_HTTP2_TOO_MANY_INVALID_FRAMES),
   * and that call writes the GOAWAY; the session's 'error' event comes a tick later,
   * once it has gone, and no event, option or subclass comes before. So this session's
   * destroy is wrapped, and calls Node's with the code added. The codes clients are
   * told are checked by test/reliability/h2-abuse.test.ts on the terminating plane
   * (floods, stream_limit) and test/conformance/h2-conformance.test.ts (frame errors).
   */
  private tellWhyEnded(session: http2.ServerHttp2Session, atStreamLimit: () => boolean): () => TerminationReason | undefined {
    let endedFor: TerminationReason | undefined;
    const destroy = session.destroy.bind(session);
    session.destroy = (err?: Error & { code?: string; errno?: number }, code?: number): void => {
      if (code === undefined && !session.destroyed && (err?.code === NodeErrorCode.HTTP2_ERROR || err?.code === NodeErrorCode.HTTP2_TOO_MANY_INVALID_FRAMES)) {
        endedFor = err.code === NodeErrorCode.HTTP2_TOO_MANY_INVALID_FRAMES ? 'empty_frame_flood' : err.errno === undefined ? undefined : (NGHTTP2_SESSION_ERRORS.get(err.errno) ?? (err.errno === NGHTTP2_ERR_PROTO && atStreamLimit() ? 'stream_limit' : undefined));
        code = (endedFor && GOAWAY_FOR[endedFor]) ?? (err.errno === undefined ? undefined : GOAWAY_FOR_NGHTTP2_ERROR.get(err.errno));
        if (code !== undefined) this.ctx.observer.goaway('proxy', code);
      }
      destroy(err, code);
    };
    return () => endedFor;
  }

  private goaway(session: http2.Http2Session): void {
    if (session.closed || session.destroyed) return;
    this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
    // close() sends GOAWAY and lets the streams in flight finish.
    session.close();
  }

  /** Stop accepting; ask HTTP/2 clients to go (GOAWAY) and HTTP/1.1 clients to close. */
  /** Relayed HTTP/2 connections the drain still waits for (H2Relays.settling). */
  get relaysSettling(): number {
    return this.relays?.settling ?? 0;
  }

  drain(): Promise<void> {
    this.draining = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const session of this.sessions) this.goaway(session);
    this.relays?.drain();
    this.h1Relays?.drain();
    // Idle keep-alive connections go now; busy ones are asked to close with their response.
    for (const { socket, record } of this.h1Clients) if (record.active === 0) socket.destroy();
    return closed;
  }

  /** End whatever is still open (after the drain timeout). */
  destroy(): void {
    for (const session of this.sessions) session.destroy();
    this.relays?.destroy();
    this.h1Relays?.destroy();
    for (const { socket } of this.h1Clients) socket.destroy();
    this.server.close();
  }
}
