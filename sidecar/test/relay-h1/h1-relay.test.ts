// The HTTP/1.1 relay (--http1-data-plane relay) between a raw client and real
// apps: requests and answers pass byte for byte, one upstream connection per
// client connection, pipelined requests answered in order, every smuggling shape
// refused before the app, and the same series on /metrics as the terminating path.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startSidecarProcess } from '@rpcscope/demo/sidecar-process';
import { RawClient } from '../support/raw-h1-client.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const RELAY = ['--http1-data-plane', 'relay', '--upstream-protocol', 'http1'];

/** A response far larger than every socket buffer on its way. */
const BIG = 64 * 1024 * 1024;
let bigFinished = false;

interface Seen {
  method: string;
  url: string;
  rawHeaders: string[];
  body: Buffer;
}

/** A node:http app: echoes what it is sent, and answers a few paths in their own shapes. */
async function startApp(): Promise<{ server: http.Server; port: number; seen: Seen[]; connections: () => number; held: http.IncomingMessage[] }> {
  const seen: Seen[] = [];
  const held: http.IncomingMessage[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    // Never answered: the call stays open until its client goes.
    if (req.url === '/hold') return void held.push(req);
    if (req.url === '/slow-sink') {
      // Reads nothing for a second, then counts what it is sent.
      req.pause();
      let n = 0;
      req.on('data', (d: Buffer) => (n += d.length));
      req.on('end', () => res.end(String(n)));
      return void setTimeout(() => req.resume(), 1000);
    }
    if (req.url === '/big') {
      res.writeHead(200, { 'content-length': BIG });
      const piece = Buffer.alloc(1 << 16, 0x61);
      let sent = 0;
      const more = (): void => {
        while (sent < BIG) {
          sent += piece.length;
          if (!res.write(piece)) return void res.once('drain', more);
        }
        res.end();
      };
      res.once('finish', () => (bigFinished = true));
      return more();
    }
    const parts: Buffer[] = [];
    req.on('data', (d: Buffer) => parts.push(d));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      seen.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders, body });
      if (req.url === '/no-content') return void res.writeHead(204).end();
      if (req.url === '/not-modified') return void res.writeHead(304, { etag: '"x"' }).end();
      if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first ');
        return void setTimeout(() => res.end('second'), 5);
      }
      const answer = body.length ? body : Buffer.from(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': answer.length });
      res.end(req.method === 'HEAD' ? undefined : answer);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, seen, connections: () => connections, held };
}

/** A raw app that answers every request head with `answer`, byte for byte. */
async function startRawApp(answer: string): Promise<{ server: net.Server; port: number }> {
  const server = net.createServer((socket) => {
    let pending = '';
    socket.on('data', (d: Buffer) => {
      pending += d.toString('latin1');
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        pending = pending.slice(end + 4);
        socket.write(answer);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port };
}

const get = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: app\r\n${extra}\r\n`;

describe('the HTTP/1.1 relay', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: TestSidecar;

  before(async () => {
    app = await startApp();
    sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, RELAY);
  });
  after(async () => {
    await sc.stop();
    app.server.close();
  });

  it('passes bodies by length and chunked both ways byte for byte, on one upstream connection', async () => {
    const before = app.connections();
    const seenBefore = app.seen.length;
    const client = new RawClient(sc.port);
    const payload = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    const [a] = await client.send(Buffer.concat([Buffer.from(`POST /echo HTTP/1.1\r\nHost: app\r\nX-Mine: kept\r\nContent-Length: ${payload.length}\r\n\r\n`), payload]), ['POST']);
    assert.equal(a!.status, 200);
    assert.ok(a!.body.equals(payload), 'the answer carries the body back whole');
    const [b] = await client.send('POST /echo HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n', ['POST']);
    assert.equal(b!.body.toString(), 'hello world');
    const [c] = await client.send(get('/chunked'), ['GET']);
    assert.equal(c!.body.toString(), 'first second');
    assert.match(c!.raw.toString('latin1'), /transfer-encoding: chunked/i);
    for (let i = 0; i < 5; i++) assert.equal((await client.send(get(`/n${i}`), ['GET']))[0]!.body.toString(), `GET /n${i}`);
    const seen = app.seen.slice(seenBefore);
    assert.ok(seen[0]!.body.equals(payload), 'the app reads the body sent');
    assert.deepEqual(seen[0]!.rawHeaders, ['Host', 'app', 'X-Mine', 'kept', 'Content-Length', String(payload.length)], 'the head reaches the app as sent');
    assert.equal(seen[1]!.body.toString(), 'hello world');
    assert.equal(app.connections() - before, 1, 'eight calls on one client connection take one upstream connection');
    client.close();
  });

  it('answers pipelined requests in order', async () => {
    const client = new RawClient(sc.port);
    const got = await client.send(get('/a') + 'POST /b HTTP/1.1\r\nHost: app\r\nContent-Length: 3\r\n\r\nxyz' + get('/c'), ['GET', 'POST', 'GET']);
    assert.deepEqual(got.map((g) => g.body.toString()), ['GET /a', 'xyz', 'GET /c']);
    client.close();
  });

  it('passes HEAD, 204 and 304 answers without a body, and the connection goes on', async () => {
    const client = new RawClient(sc.port);
    const got = await client.send('HEAD /h HTTP/1.1\r\nHost: app\r\n\r\n' + get('/no-content') + get('/not-modified') + get('/after'), ['HEAD', 'GET', 'GET', 'GET']);
    assert.deepEqual(got.map((g) => [g.status, g.body.toString()]), [[200, ''], [204, ''], [304, ''], [200, 'GET /after']]);
    assert.match(got[0]!.raw.toString('latin1'), /content-length: 7/i, 'HEAD keeps the length the GET would have');
    client.close();
  });

  it('connects again for the next request when the app closed its idle connection', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await client.send(get('/k1'), ['GET']))[0]!.body.toString(), 'GET /k1');
    // On a connection an earlier test's client left, or a new one: either way the app now closes it.
    const before = app.connections();
    app.server.closeIdleConnections();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await client.send(get('/k2'), ['GET']))[0]!.body.toString(), 'GET /k2');
    assert.equal(app.connections() - before, 1);
    client.close();
  });

  it('a client gone mid-call ends its call as the client\'s and closes the upstream connection', async () => {
    const since = sc.recorder.started.length;
    const client = new RawClient(sc.port);
    void client.send(get('/hold'), ['GET']).catch(() => {});
    for (let i = 0; i < 200 && app.held.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const req = app.held.at(-1)!;
    const upstreamClosed = new Promise((r) => req.socket.once('close', r));
    client.close();
    await upstreamClosed;
    const call = await sc.recorder.waitForCall((c) => c.path === '/hold', { since });
    assert.equal(call.reset?.side, 'client');
  });

  it('reads the app no faster than the client reads the relay', async () => {
    bigFinished = false;
    const socket = net.connect(sc.port, '127.0.0.1');
    socket.write(get('/big'));
    // The client reads nothing for a second: the app must still be writing then.
    socket.pause();
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(bigFinished, false, 'the relay held the whole response instead of pausing the app');
    let got = 0;
    await new Promise<void>((resolve) => {
      socket.on('data', (d: Buffer) => {
        got += d.length;
        if (got >= BIG) resolve();
      });
      socket.resume();
    });
    assert.ok(got > BIG, 'the whole body and its head came through');
    socket.destroy();
  });

  it('reads the client no faster than the app reads the relay', async () => {
    const client = new RawClient(sc.port);
    const size = 64 * 1024 * 1024;
    const answer = client.send(Buffer.concat([Buffer.from(`POST /slow-sink HTTP/1.1\r\nHost: app\r\nContent-Length: ${size}\r\n\r\n`), Buffer.alloc(size, 0x62)]), ['POST'], 30_000);
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(client.unsent > 0, 'the relay took the whole body while the app read none');
    assert.equal((await answer)[0]!.body.toString(), String(size));
    client.close();
  });

  it('passes Expect: 100-continue on and the app\'s 100 back, then the body', async () => {
    const client = new RawClient(sc.port);
    const answer = client.send('POST /continue HTTP/1.1\r\nHost: app\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n', ['POST']);
    await client.waitFor('HTTP/1.1 100 Continue\r\n');
    await client.send('hello', []);
    assert.equal((await answer)[0]!.body.toString(), 'hello');
    client.close();
  });

  it('drops the request\'s hop-by-hop fields, and keeps the rest as sent', async () => {
    const seen = app.seen.length;
    const client = new RawClient(sc.port);
    await client.send('GET /hop HTTP/1.1\r\nHost: app\r\nConnection: keep-alive, X-Secret\r\nUpgrade: websocket\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nX-Kept: 2\r\n\r\n', ['GET']);
    assert.deepEqual(app.seen[seen]!.rawHeaders, ['Host', 'app', 'TE', 'trailers', 'X-Kept', '2']);
    client.close();
  });

  const SHAPES: [string, string, number][] = [
    ['Content-Length with Transfer-Encoding', 'POST /s HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['two Content-Lengths', 'POST /s HTTP/1.1\r\nHost: app\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd', 400],
    ['obs-fold', 'GET /s HTTP/1.1\r\nHost: app\r\nX-A: 1\r\n folded\r\n\r\n', 400],
    ['a bare LF', 'GET /s HTTP/1.1\nHost: app\r\n\r\n', 400],
    ['absolute form', 'GET http://elsewhere/s HTTP/1.1\r\nHost: app\r\n\r\n', 400],
    ['CONNECT', 'CONNECT elsewhere:443 HTTP/1.1\r\nHost: elsewhere:443\r\n\r\n', 405],
  ];
  for (const [name, bytes, status] of SHAPES) {
    it(`refuses ${name} with ${status}, closes, and the app never sees it`, async () => {
      const seen = app.seen.length;
      const client = new RawClient(sc.port);
      const [got] = await client.send(bytes, ['GET']);
      assert.equal(got!.status, status);
      assert.match(got!.raw.toString('latin1'), /connection: close/i);
      // RFC 9110 §15.5.6: a 405 names the methods allowed.
      if (status === 405) assert.match(got!.raw.toString('latin1'), /\r\nallow: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS\r\n/);
      await client.closed;
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(app.seen.length, seen, 'nothing reached the app');
    });
  }
});

describe('the HTTP/1.1 relay passes the app\'s answer as it came', () => {
  it('keeps chunk extensions and trailers, and drops only hop-by-hop lines', async () => {
    const body = 'HTTP/1.1 200 OK\r\nX-App: 1\r\nTransfer-Encoding: chunked\r\n';
    const rest = '\r\n5;ext=1\r\nhello\r\n0\r\nx-trailer: t\r\n\r\n';
    const raw = await startRawApp(`${body}Connection: keep-alive, x-hop\r\nKeep-Alive: timeout=5\r\nX-Hop: 1\r\n${rest}`);
    const sc = await startTestSidecar(`http://127.0.0.1:${raw.port}`, RELAY);
    try {
      const client = new RawClient(sc.port);
      const [a, b] = await client.send(get('/x') + get('/y'), ['GET', 'GET']);
      // The app's Connection line and what it names go; the relay says the client's connection is kept.
      assert.equal(a!.raw.toString('latin1'), `${body}connection: keep-alive\r\n${rest}`);
      assert.equal(b!.raw.toString('latin1'), `${body}connection: keep-alive\r\n${rest}`);
      client.close();
    } finally {
      await sc.stop();
      raw.server.close();
    }
  });

  it('closes an idle relayed connection when the sidecar drains', async () => {
    const app = await startApp();
    const sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, RELAY);
    const client = new RawClient(sc.port);
    assert.equal((await client.send(get('/d'), ['GET']))[0]!.status, 200);
    const started = Date.now();
    await sc.stop();
    await client.closed;
    assert.ok(Date.now() - started < 1500, 'the drain did not wait for its timeout');
    app.server.close();
  });

  it('answers 408 to a head that trickles in past --request-headers-timeout, as the terminating path does', async () => {
    const app = await startApp();
    const sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, [...RELAY, '--request-headers-timeout', '200ms']);
    try {
      const client = new RawClient(sc.port);
      const [got] = await client.send('GET /slow HTTP/1.1\r\nHost: ap', ['GET']);
      assert.equal(got!.status, 408);
      await client.closed;
      assert.equal(app.seen.length, 0);
    } finally {
      await sc.stop();
      app.server.close();
    }
  });

  it('answers 503 when the app cannot be reached, and 502 when it closes without an answer', async () => {
    const closer = net.createServer((s) => s.once('data', () => s.destroy()));
    await new Promise<void>((r) => closer.listen(0, '127.0.0.1', r));
    const closerPort = (closer.address() as AddressInfo).port;
    const free = net.createServer();
    await new Promise<void>((r) => free.listen(0, '127.0.0.1', r));
    const freePort = (free.address() as AddressInfo).port;
    await new Promise((r) => free.close(r));
    for (const [port, status, field] of [[freePort, 503, 'upstreamUnreachable'], [closerPort, 502, undefined]] as const) {
      const sc = await startTestSidecar(`http://127.0.0.1:${port}`, RELAY);
      try {
        const client = new RawClient(sc.port);
        const [got] = await client.send(get('/down'), ['GET']);
        assert.equal(got!.status, status);
        const call = await sc.recorder.waitForCall((c) => c.path === '/down');
        assert.equal(call.httpStatus, status);
        if (field) assert.equal(call[field], true);
        client.close();
      } finally {
        await sc.stop();
      }
    }
    closer.close();
  });
});

/** The series both planes must agree on for the same calls (times and connections aside). */
const COMPARED = /^rpcscope_(calls_total|call_duration_seconds_count|call_bytes_total|payload_bytes_(count|sum)|upstream_calls_total|calls_active|connections_terminated_total)[{ ]/;

describe('the HTTP/1.1 relay and the terminating path', () => {
  it('leave the same call series on /metrics for the same calls', async () => {
    const series: string[][] = [];
    const app = await startApp();
    for (const plane of ['terminate', 'relay']) {
      const sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, '--http1-data-plane', plane, '--upstream-protocol', 'http1']);
      try {
        const client = new RawClient(sc.port);
        await client.send(get('/m/a'), ['GET']);
        await client.send('POST /m/b HTTP/1.1\r\nHost: app\r\nContent-Length: 11\r\n\r\nhello world', ['POST']);
        await client.send('PUT /m/c HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n', ['PUT']);
        await client.send(get('/no-content') + get('/chunked'), ['GET', 'GET']);
        client.close();
        const bad = new RawClient(sc.port);
        await bad.send('GET /s HTTP/1.1\r\nHost: app\r\nX-A: 1\r\n folded\r\n\r\n', ['GET']);
        await bad.closed;
        // Every call ended: none is still active on either plane.
        let lines: string[] = [];
        for (let i = 0; i < 100; i++) {
          const text = await (await fetch(`${sc.adminUrl}/metrics`)).text();
          lines = text.split('\n').filter((l) => COMPARED.test(l)).sort();
          if (lines.filter((l) => l.startsWith('rpcscope_calls_total')).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0) >= 5) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        series.push(lines);
      } finally {
        await sc.stop();
      }
    }
    app.server.close();
    assert.ok(series[0]!.some((l) => l.startsWith('rpcscope_call_bytes_total')), 'the bytes are compared');
    assert.ok(series[0]!.some((l) => l.startsWith('rpcscope_calls_total')), 'the terminating path counted its calls');
    assert.deepEqual(series[1], series[0]);
  });
});
