// An HTTP/1.1 and HTTP/2 (h2c) upstream that answers 200 to everything and
// keeps every request it received, so a test can assert what reached it — and
// what never did.
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { writeHead } from '@rpcscope/demo';

export interface Received {
  httpVersion: string;
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface RecordingUpstream {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

export async function startRecordingUpstream(): Promise<RecordingUpstream> {
  const received: Received[] = [];
  const record = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void => {
    received.push({ httpVersion: req.httpVersion, method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      writeHead(res, 200, { 'content-type': 'text/plain' });
      res.end('recorded\n');
    });
  };
  const h1 = http.createServer(record);
  const h2 = http2.createServer(record);
  // Both versions on one cleartext port, told apart by the HTTP/2 preface's first bytes.
  const server = net.createServer((socket) => {
    socket.once('data', (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      // The HTTP/2 session reads what was put back itself; the HTTP/1.1 parser needs the socket flowing.
      if (first.toString('latin1').startsWith('PRI * HTTP/2.0')) h2.emit('connection', socket);
      else {
        h1.emit('connection', socket);
        socket.resume();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
