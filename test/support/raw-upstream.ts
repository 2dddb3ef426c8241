// An HTTP/1.1 app on raw TCP, for smuggling tests: it keeps every byte each
// connection brought, reads requests from them with the strict reader of
// h1-framing.ts, and answers each request it reads, keeping the connection open
// (keep-alive), with a body naming it (`GET /a`). A test then asserts exactly
// which requests the app parsed on which connection, and that no byte was left
// over or misframed.
import net, { type AddressInfo } from 'node:net';
import { readMessage, type H1Message } from './h1-framing.ts';

export interface RawConnection {
  /** Every byte received so far, in order. */
  bytes(): Buffer;
  /** The requests read from those bytes, in order. */
  requests: H1Message[];
  /** Bytes after the last whole request: empty once every byte was read as a request. */
  leftover(): Buffer;
  /** Why the reader gave up on this connection (it was then closed). */
  error: string | undefined;
  /** Resolves once the connection has closed. */
  closed: Promise<void>;
}

export interface RawUpstream {
  url: string;
  port: number;
  connections: RawConnection[];
  /** Every request of every connection, as `METHOD target`. */
  seen(): string[];
  close(): Promise<void>;
}

/** The app's answer to each request: 200, keep-alive, the request line's method and target as the body. */
function answer(req: H1Message): string {
  const body = req.startLine.replace(/ HTTP\/1\.1$/, '');
  return `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

export async function startRawUpstream(): Promise<RawUpstream> {
  const connections: RawConnection[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const chunks: Buffer[] = [];
    let read = 0;
    const conn: RawConnection = {
      bytes: () => Buffer.concat(chunks),
      requests: [],
      leftover: () => conn.bytes().subarray(read),
      error: undefined,
      closed: new Promise((resolve) => socket.once('close', () => resolve())),
    };
    connections.push(conn);
    socket.on('data', (d: Buffer) => {
      chunks.push(d);
      if (conn.error) return;
      const bytes = conn.bytes();
      for (;;) {
        if (read === bytes.length) return;
        const r = readMessage(bytes, read, 'request');
        if ('incomplete' in r) return;
        if ('error' in r) {
          conn.error = r.error;
          socket.destroy();
          return;
        }
        conn.requests.push(r.message);
        read = r.next;
        socket.write(answer(r.message));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    connections,
    seen: () => connections.flatMap((c) => c.requests.map((r) => r.startLine.replace(/ HTTP\/1\.1$/, ''))),
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
