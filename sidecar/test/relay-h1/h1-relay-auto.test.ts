// The HTTP/1.1 relay under --upstream-protocol auto, the default: each client
// connection is relayed while the app is known to speak HTTP/1.1, and the
// HTTP/1.1 callers of an HTTP/2-only app keep the terminating path, which
// translates their calls. Told apart by what each plane does to the app's
// answer: the relay passes its head byte for byte, where the terminating path's
// node:http reads each field and writes it anew, its value's leading whitespace
// (optional whitespace, RFC 9110 §5.5) gone.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startSidecarProcess } from '@rpcscope/demo/sidecar-process';
import { RawClient, type Answer } from '../support/raw-h1-client.ts';
import { startTestSidecar } from '../support/sidecar.ts';

const RELAY = ['--http1-data-plane', 'relay'];
const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: app\r\n\r\n`;
/** The app's field as it wrote it, whitespace and all: only the relay passes it so. */
const PADDED = 'X-Padded:    value';
const verbatim = (a: Answer): boolean => a.raw.toString('latin1').includes(`\r\n${PADDED}\r\n`);

/** A node:http app whose answers carry a padded field, that notes the upstream connection each request came on. */
async function startH1App(): Promise<{ server: http.Server; port: number; socketOf: Map<string, net.Socket> }> {
  const socketOf = new Map<string, net.Socket>();
  const server = http.createServer((req, res) => {
    socketOf.set(req.url ?? '', req.socket);
    res.setHeader('X-Padded', '   value');
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`h1 ${req.url}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, socketOf };
}

describe('the HTTP/1.1 relay under --upstream-protocol auto', () => {
  let app: Awaited<ReturnType<typeof startH1App>>;

  before(async () => {
    app = await startH1App();
  });
  after(() => app.server.close());

  it('relays the connections to an HTTP/1.1 app, the first one, come before anything was learned, included', async () => {
    const sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, RELAY);
    try {
      assert.equal(sc.config.upstreamProtocol, 'auto');
      const first = new RawClient(sc.port);
      const [a, b] = await first.send(get('/first-a') + get('/first-b'), ['GET', 'GET']);
      assert.deepEqual([a!.status, a!.body.toString(), b!.body.toString()], [200, 'h1 /first-a', 'h1 /first-b']);
      assert.ok(verbatim(a!) && verbatim(b!), "the app's answers passed byte for byte");
      assert.equal(app.socketOf.get('/first-a'), app.socketOf.get('/first-b'), 'the pipelined requests came to the app on the one connection paired with the client');
      const second = new RawClient(sc.port);
      const [c] = await second.send(get('/second'), ['GET']);
      assert.equal(c!.body.toString(), 'h1 /second');
      assert.ok(verbatim(c!));
      assert.notEqual(app.socketOf.get('/second'), app.socketOf.get('/first-a'), 'each client connection has its own upstream connection');
      first.close();
      second.close();
    } finally {
      await sc.stop();
    }
  });

  it('is told apart from the terminating path, which writes the same answer anew', async () => {
    const sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, ['--http1-data-plane', 'terminate']);
    try {
      const client = new RawClient(sc.port);
      const [a] = await client.send(get('/terminated'), ['GET']);
      assert.equal(a!.body.toString(), 'h1 /terminated');
      assert.equal(verbatim(a!), false);
      assert.match(a!.raw.toString('latin1'), /\r\nX-Padded: value\r\n/);
      client.close();
    } finally {
      await sc.stop();
    }
  });

  it('answers many clients that connect at once, after one question to the app', async () => {
    const sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, ...RELAY, '--log-level', 'info']);
    try {
      const clients = Array.from({ length: 20 }, () => new RawClient(sc.port));
      const answers = await Promise.all(clients.map((c, i) => c.send(get(`/many-${i}`), ['GET'], 10_000)));
      assert.deepEqual(answers.map(([a]) => a!.body.toString()), clients.map((_, i) => `h1 /many-${i}`));
      assert.ok(answers.every(([a]) => verbatim(a!)), 'all relayed');
      assert.equal(sc.log().split('\n').filter((l) => l.includes('"upstream HTTP versions learned"')).length, 1);
      for (const c of clients) c.close();
    } finally {
      await sc.stop();
    }
  });
});

describe('HTTP/1.1 callers of an HTTP/2-only app, with --http1-data-plane relay', () => {
  it('get the first call answered 503 and their next calls through the terminating path, translated to HTTP/2', async () => {
    const app = http2.createServer();
    app.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.end(`h2 ${headers[':path']}`);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    const sc = await startTestSidecar(`http://127.0.0.1:${(app.address() as AddressInfo).port}`, RELAY);
    try {
      const first = new RawClient(sc.port);
      const [a] = await first.send(get('/one'), ['GET']);
      // As the terminating path answers the first HTTP/1.1 call to an HTTP/2-only app: UNAVAILABLE, which a caller may retry.
      assert.equal(a!.status, 503);
      assert.match(a!.raw.toString('latin1'), /\r\nconnection: close\r\n/i, 'the client is asked to come back on a new connection');
      await first.closed;
      const second = new RawClient(sc.port);
      const [b] = await second.send(get('/two'), ['GET']);
      assert.deepEqual([b!.status, b!.body.toString()], [200, 'h2 /two']);
      const [c] = await second.send(get('/three'), ['GET']);
      assert.deepEqual([c!.status, c!.body.toString()], [200, 'h2 /three']);
      second.close();
    } finally {
      await sc.stop();
      app.close();
    }
  });
});

describe('HTTP/1.1 callers of an unreachable app, with --http1-data-plane relay', () => {
  it('are answered 503, as on the terminating path', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    for (const plane of ['relay', 'terminate']) {
      const sc = await startTestSidecar(`http://127.0.0.1:${port}`, ['--http1-data-plane', plane]);
      try {
        const client = new RawClient(sc.port);
        const [a] = await client.send(get('/nobody'), ['GET']);
        assert.equal(a!.status, 503, plane);
        client.close();
      } finally {
        await sc.stop();
      }
    }
  });
});
