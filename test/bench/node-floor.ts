// The floor of any proxy written on Node's HTTP stacks: the least a
// node:http2 (or node:http) pass-through does per call, with no observation at
// all. Each client stream becomes a stream on one upstream HTTP/2 session,
// headers, body and trailers copied as they come; HTTP/1.1 callers go to an
// HTTP/1.1 upstream through a keep-alive agent. Prints its URL on stdout.
//   node --import tsx test/bench/node-floor.ts h2c|tls|h1 UPSTREAM_URL [CERT KEY]
import http from 'node:http';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';

const [mode, upstream, certFile, keyFile] = process.argv.slice(2);
if (!upstream || !['h2c', 'tls', 'h1'].includes(mode ?? '')) {
  process.stderr.write('usage: node-floor.ts h2c|tls|h1 UPSTREAM_URL [CERT KEY]\n');
  process.exit(2);
}

// Connection-specific fields may not cross to HTTP/2 (RFC 9113 §8.2.2).
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

function serveH2(server: http2.Http2Server | http2.Http2SecureServer): void {
  let session: http2.ClientHttp2Session | undefined;
  const upstreamSession = (): http2.ClientHttp2Session => {
    if (!session || session.closed || session.destroyed) {
      session = http2.connect(upstream!);
      session.on('error', () => (session = undefined));
    }
    return session;
  };
  server.on('stream', (stream, headers) => {
    const out: http2.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k)) out[k] = v;
    const up = upstreamSession().request(out);
    let trailers: http2.IncomingHttpHeaders | undefined;
    up.on('response', (h) => {
      const { [':status']: status, ...rest } = h;
      stream.respond({ ':status': status, ...rest }, { waitForTrailers: true });
    });
    up.on('trailers', (t) => (trailers = t));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers ?? {}));
    stream.pipe(up);
    up.pipe(stream);
    up.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('error', () => up.close(http2.constants.NGHTTP2_CANCEL));
  });
}

let server: http.Server | http2.Http2Server | http2.Http2SecureServer;
if (mode === 'h1') {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const target = new URL(upstream);
  server = http.createServer((req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent }, (ures) => {
      res.writeHead(ures.statusCode ?? 502, ures.headers);
      ures.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
} else if (mode === 'tls') {
  server = http2.createSecureServer({ cert: readFileSync(certFile!), key: readFileSync(keyFile!), allowHTTP1: false });
  serveH2(server);
} else {
  server = http2.createServer();
  serveH2(server);
}
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${mode === 'tls' ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => process.exit(0));
