// One cleartext port for HTTP/1.1 and HTTP/2 with prior knowledge (h2c).
// http2.createServer({allowHTTP1: true}) honours allowHTTP1 only over TLS,
// where ALPN picks the protocol; in cleartext the client's first bytes are the
// only signal, so each connection is sniffed for the HTTP/2 connection preface
// (RFC 9113 §3.4) before it is handed to the matching server.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { Http2ServerRequest, Http2ServerResponse, ServerHttp2Session } from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export type HttpRequest = IncomingMessage | Http2ServerRequest;
export type HttpResponse = ServerResponse | Http2ServerResponse;
export type RequestHandler = (req: HttpRequest, res: HttpResponse) => void;
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export type H2cServer = {
  host: string;
  port: number;
  /** Destroys every connection (HTTP/2 sessions first, so their streams abort) and stops listening. */
  close(): Promise<void>;
};

export type H2cOptions = {
  host: string;
  port: number;
  onRequest: RequestHandler;
  /** HTTP/1.1 Upgrade requests (WebSocket); without it they are refused by closing the socket. */
  onUpgrade?: UpgradeHandler;
};

const ignore = () => {};

export function listenH2c(opts: H2cOptions): Promise<H2cServer> {
  const sockets = new Set<net.Socket>();
  const sessions = new Set<ServerHttp2Session>();

  // Client resets and aborted bodies surface as 'error' on the request or
  // response; the handlers see them through 'close', and an unheard 'error'
  // would take the whole process down.
  const onRequest = (req: HttpRequest, res: HttpResponse) => {
    req.on('error', ignore);
    res.on('error', ignore);
    opts.onRequest(req, res);
  };

  const h1 = http.createServer(onRequest);
  h1.on('clientError', (_err, socket) => socket.destroy());
  h1.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', ignore);
    if (opts.onUpgrade) opts.onUpgrade(req, socket, head);
    else socket.destroy();
  });

  const h2 = http2.createServer(onRequest);
  h2.on('session', (session: ServerHttp2Session) => {
    sessions.add(session);
    session.on('error', ignore);
    session.on('close', () => sessions.delete(session));
  });
  h2.on('stream', (stream) => stream.on('error', ignore));
  h2.on('sessionError', ignore);

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', ignore);
    sniff(socket, (isHttp2, head) => {
      socket.unshift(head);
      if (isHttp2) {
        h2.emit('connection', socket);
      } else {
        h1.emit('connection', socket);
        // The sniffer paused the socket; the HTTP/1.1 parser reads through
        // stream events and would otherwise wait forever.
        socket.resume();
      }
    });
  });

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      const address = server.address() as net.AddressInfo;
      resolve({
        host: opts.host,
        port: address.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            for (const session of sessions) session.destroy();
            for (const socket of sockets) socket.destroy();
          }),
      });
    });
  });
}

/**
 * Reads until the bytes either diverge from the preface or contain all of it,
 * then pauses the socket and reports what it read, for the caller to unshift.
 */
function sniff(socket: net.Socket, decide: (isHttp2: boolean, head: Buffer) => void): void {
  let head: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
    const n = Math.min(head.length, PREFACE.length);
    const matches = head.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (matches && head.length < PREFACE.length) return;
    socket.off('data', onData);
    socket.pause();
    decide(matches, head);
  };
  socket.on('data', onData);
}
