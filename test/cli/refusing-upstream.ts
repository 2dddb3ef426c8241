// An HTTP/2 app that refuses some streams, as an app at its concurrency limit
// does: every stream on a path under /refuse/ gets RST_STREAM(REFUSED_STREAM)
// before any answer; every other one a gRPC OK. It counts what it refused.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface RefusingUpstream {
  url: string;
  refused(): number;
  answered(): number;
  close(): Promise<void>;
}

export async function startRefusingUpstream(): Promise<RefusingUpstream> {
  let refused = 0;
  let answered = 0;
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    if (String(headers[':path']).startsWith('/refuse/')) {
      refused++;
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    stream.resume();
    stream.on('end', () => {
      answered++;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    refused: () => refused,
    answered: () => answered,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A gRPC-shaped unary call over `session` to `path`: the grpc-status the caller got, or the reset code. */
export function grpcCall(session: http2.ClientHttp2Session, path: string): Promise<string> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '5S' });
    let status = '';
    req.on('response', (h) => (status = String(h['grpc-status'] ?? status)));
    req.on('trailers', (t) => (status = String(t['grpc-status'] ?? status)));
    req.on('error', () => {});
    req.on('close', () => resolve(status !== '' ? status : `reset ${req.rstCode}`));
    req.resume();
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}
