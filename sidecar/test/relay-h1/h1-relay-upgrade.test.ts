// Upgrades through the HTTP/1.1 relay (--http1-data-plane relay): a real `ws`
// client and server talk through it as through the terminating path. The
// hand-shake reaches the app with its Connection and Upgrade; after a 101 the
// sockets are joined byte for byte, either side's close or reset ends the other,
// and the call leaves the same series on /metrics as on the terminating path. An
// upgrade the app refuses is relayed, and both connections close after it.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { WebSocket, WebSocketServer, type RawData } from 'ws';
import { startSidecarProcess } from '@rpcscope/demo/sidecar-process';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const RELAY = ['--http1-data-plane', 'relay', '--upstream-protocol', 'http1'];

interface App {
  server: http.Server;
  port: number;
  /** The raw header lines of each upgrade request the app read. */
  upgrades: { url: string; rawHeaders: string[] }[];
  /** How each server-side WebSocket closed. */
  closes: { url: string; code: number }[];
  /** /raw-sink's upgraded sockets, paused, and what each has read once resumed. */
  sinks: { socket: net.Socket; read: number }[];
  /** Whether /raw-source finished writing its 64 MiB. */
  sourceDone: boolean;
}

/** Far past every socket buffer on the way. */
const BIG = 64 * 1024 * 1024;
const SWITCHED = 'HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n';

/**
 * An app with a `ws` server on /ws/* (echoes every message; `bye` makes it close
 * with 4000, `drop` makes it reset), a raw protocol on /raw that writes its 101 and
 * its first bytes in one write and then echoes, /raw-sink that reads nothing until
 * resumed, /raw-source that writes 64 MiB, a 426 on /refuse (the app closes its
 * connection after it), and plain answers to plain requests.
 */
async function startApp(): Promise<App> {
  const upgrades: App['upgrades'] = [];
  const closes: App['closes'] = [];
  const app = { upgrades, closes, sinks: [] as App['sinks'], sourceDone: false };
  const server = http.createServer((req, res) => res.end(`plain ${req.url}`));
  const wss = new WebSocketServer({ noServer: true });
  wss.on('connection', (ws, req) => {
    ws.on('message', (data: RawData, binary: boolean) => {
      if (!binary && String(data) === 'bye') return ws.close(4000, 'server done');
      if (!binary && String(data) === 'drop') return ws.terminate();
      ws.send(data, { binary });
    });
    ws.on('close', (code) => closes.push({ url: req.url ?? '', code }));
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    upgrades.push({ url: req.url ?? '', rawHeaders: req.rawHeaders });
    socket.on('error', () => {});
    // Its peer's end ends it (node:http keeps an upgraded socket half open).
    socket.on('end', () => socket.end());
    if (req.url?.startsWith('/ws/')) return wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req));
    if (req.url === '/raw') {
      socket.write(`${SWITCHED}first from app|`);
      socket.write(head);
      return void socket.pipe(socket);
    }
    if (req.url === '/raw-sink') {
      const sink = { socket, read: head.length };
      app.sinks.push(sink);
      socket.pause();
      socket.on('data', (d: Buffer) => (sink.read += d.length));
      return void socket.write(SWITCHED);
    }
    if (req.url === '/raw-source') {
      socket.write(SWITCHED);
      const piece = Buffer.alloc(1 << 16, 0x61);
      const source = Readable.from((function* () {
        for (let sent = 0; sent < BIG; sent += piece.length) yield piece;
      })());
      source.once('end', () => (app.sourceDone = true));
      return void source.pipe(socket, { end: false });
    }
    socket.end('HTTP/1.1 426 Upgrade Required\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(app, { server, port: (server.address() as AddressInfo).port });
}

function open(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

function nextMessage(ws: WebSocket): Promise<Buffer> {
  return new Promise((resolve) => ws.once('message', (d: RawData) => resolve(Buffer.isBuffer(d) ? d : Buffer.from(d as ArrayBuffer))));
}

function closed(ws: WebSocket): Promise<{ code: number; reason: string }> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve({ code: 1006, reason: '' });
  return new Promise((resolve) => ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: String(reason) })));
}

/** Resolves once `socket` has received `text` in all; rejects, naming what came, if it closes first. */
function received(socket: net.Socket, text: string): Promise<string> {
  let got = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer): void => {
      got += d.toString('latin1');
      if (!got.includes(text)) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(got);
    };
    const onClose = (): void => reject(new Error(`closed before ${JSON.stringify(text)} came; got ${JSON.stringify(got)}`));
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}

async function until(what: string, ok: () => boolean): Promise<void> {
  for (let i = 0; i < 250 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), what);
}

describe('a WebSocket through the HTTP/1.1 relay', () => {
  let app: App;
  let sc: TestSidecar;
  let ws: string;
  before(async () => {
    app = await startApp();
    sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, RELAY);
    ws = `ws://127.0.0.1:${sc.port}`;
  });
  after(async () => {
    await sc.stop();
    app.server.closeAllConnections();
    await new Promise((r) => app.server.close(r));
  });

  it('reaches the app with its Connection and Upgrade, and echoes messages both ways, 1 MiB ones included', async () => {
    const client = await open(`${ws}/ws/echo`);
    const seen = app.upgrades.find((u) => u.url === '/ws/echo')!;
    const names = seen.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
    assert.ok(names.includes('connection') && names.includes('upgrade') && names.includes('sec-websocket-key'), names.join(', '));
    let reply = nextMessage(client);
    client.send('hello');
    assert.equal(String(await reply), 'hello');
    // Far past every socket buffer on the way, in both directions at once.
    const big = [randomBytes(1 << 20), randomBytes(1 << 20), randomBytes(1 << 20)];
    const got: Buffer[] = [];
    const all = new Promise<void>((resolve) => client.on('message', (d: Buffer) => got.push(d) === big.length && resolve()));
    for (const b of big) client.send(b);
    await all;
    assert.deepEqual(got.map((b, i) => b.equals(big[i]!)), [true, true, true], 'each message came back whole and in order');
    client.removeAllListeners('message');
    reply = nextMessage(client);
    client.send('after');
    assert.equal(String(await reply), 'after');
    client.close();
    await closed(client);
  });

  it('stays open while quiet for longer than the relay keeps an idle upstream connection between requests', async () => {
    const client = await open(`${ws}/ws/quiet`);
    const reply = nextMessage(client);
    client.send('before');
    assert.equal(String(await reply), 'before');
    // IDLE_UPSTREAM_SOCKET_MS (4 s) closes an app connection idle between requests, never a tunnel.
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal(client.readyState, WebSocket.OPEN);
    const later = nextMessage(client);
    client.send('after a quiet while');
    assert.equal(String(await later), 'after a quiet while');
    client.close();
    await closed(client);
  });

  it('a close from the client ends the app\'s side, the upstream connection and the call, which ended normally', async () => {
    const since = sc.recorder.started.length;
    const client = await open(`${ws}/ws/client-closes`);
    client.close(1000, 'client done');
    assert.equal((await closed(client)).code, 1000);
    await until('the app saw the close', () => app.closes.some((c) => c.url === '/ws/client-closes' && c.code === 1000));
    const rec = await sc.recorder.waitForCall((c) => c.path === '/ws/client-closes', { since });
    assert.equal(rec.httpStatus, 101);
    assert.equal(rec.reset, undefined);
    await until('the upstream connection closed', () => sc.recorder.closed.filter((c) => c.side === 'upstream').length === sc.recorder.opened.filter((c) => c.side === 'upstream').length);
  });

  it('a close from the app ends the client\'s side with the app\'s code', async () => {
    const since = sc.recorder.started.length;
    const client = await open(`${ws}/ws/server-closes`);
    client.send('bye');
    assert.deepEqual(await closed(client), { code: 4000, reason: 'server done' });
    const rec = await sc.recorder.waitForCall((c) => c.path === '/ws/server-closes', { since });
    assert.equal(rec.httpStatus, 101);
  });

  it('a reset on either side ends the other, and the relay goes on', async () => {
    const fromApp = await open(`${ws}/ws/app-resets`);
    fromApp.send('drop');
    assert.equal((await closed(fromApp)).code, 1006);
    const fromClient = await open(`${ws}/ws/client-resets`);
    fromClient.terminate();
    await until('the app saw the client go', () => app.closes.some((c) => c.url === '/ws/client-resets' && c.code === 1006));
    const next = await open(`${ws}/ws/after-resets`);
    const reply = nextMessage(next);
    next.send('still here');
    assert.equal(String(await reply), 'still here');
    next.close();
    await closed(next);
  });

  it('passes on the bytes each side sent with its hand-shake, in the same write', async () => {
    const client = net.connect(sc.port, '127.0.0.1');
    client.on('error', () => {});
    await new Promise((r) => client.once('connect', r));
    const got = received(client, 'early bytes');
    client.write('GET /raw HTTP/1.1\r\nHost: app\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\nearly bytes');
    const text = await got;
    assert.match(text, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(text, /\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n/);
    assert.ok(text.endsWith('\r\n\r\nfirst from app|early bytes'), JSON.stringify(text));
    const echoed = received(client, 'later bytes');
    client.write('later bytes');
    await echoed;
    client.end();
    await new Promise((r) => client.once('close', r));
  });

  it('reads the client no faster than the app reads the tunnel', async () => {
    const client = net.connect(sc.port, '127.0.0.1');
    client.on('error', () => {});
    const sinks = app.sinks.length;
    const switched = received(client, '\r\n\r\n');
    client.write('GET /raw-sink HTTP/1.1\r\nHost: app\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n');
    await switched;
    const sink = app.sinks[sinks]!;
    client.write(Buffer.alloc(BIG, 0x62));
    // The app reads nothing for half a second: the client must still hold most of what it wrote.
    await new Promise((r) => setTimeout(r, 500));
    assert.ok(client.writableLength > 0, 'the tunnel took everything while the app read nothing');
    sink.socket.resume();
    await until('the app read every byte', () => sink.read === BIG);
    client.destroy();
  });

  it('reads the app no faster than the client reads the tunnel', async () => {
    app.sourceDone = false;
    const client = net.connect(sc.port, '127.0.0.1');
    client.on('error', () => {});
    const switched = received(client, '\r\n\r\n');
    client.write('GET /raw-source HTTP/1.1\r\nHost: app\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n');
    const head = await switched;
    // The client reads nothing for half a second: the app must still be writing then.
    client.pause();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(app.sourceDone, false, 'the tunnel held the app\'s whole output instead of pausing it');
    let got = Buffer.byteLength(head, 'latin1') - SWITCHED.length;
    await new Promise<void>((resolve) => {
      client.on('data', (d: Buffer) => (got += d.length) >= BIG && resolve());
      client.resume();
    });
    assert.equal(got, BIG);
    client.destroy();
  });

  it('answered other than 101, the upgrade is relayed and the connection closes: bytes sent past the hand-shake are never read as a request', async () => {
    const client = net.connect(sc.port, '127.0.0.1');
    client.on('error', () => {});
    let all = '';
    client.on('data', (d: Buffer) => (all += d.toString('latin1')));
    const closedNow = new Promise<void>((r) => client.once('close', () => r()));
    await new Promise((r) => client.once('connect', r));
    const refused = received(client, 'nope');
    const before = app.upgrades.length;
    // A client that speaks first in the new protocol, whose bytes happen to read as a request.
    client.write('GET /refuse HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: app\r\n\r\n');
    const answer = await refused;
    assert.match(answer, /^HTTP\/1\.1 426 Upgrade Required\r\n/);
    assert.match(answer, /\r\nconnection: close\r\n/i, 'the client is told the connection ends');
    await closedNow;
    assert.equal(app.upgrades.length, before + 1);
    assert.doesNotMatch(all, /smuggled/, 'what followed the hand-shake got no answer');
    assert.equal((all.match(/HTTP\/1\.1 /g) ?? []).length, 1, 'one answer, nothing after it');
  });
});

/** Upgrade requests of each shape, to /refuse: the app reads their heads and answers 426. */
const SHAPES: [string, string][] = [
  ['a WebSocket hand-shake with other hop-by-hop fields', 'GET /refuse HTTP/1.1\r\nHost: app\r\nConnection: keep-alive, Upgrade, X-Secret\r\nUpgrade: websocket\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n'],
  ['h2c', 'GET /refuse HTTP/1.1\r\nHost: app\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n'],
  ['a body of declared length', 'POST /refuse HTTP/1.1\r\nHost: app\r\nConnection: upgrade\r\nUpgrade: echo\r\nContent-Length: 3\r\n\r\nabc'],
  // A GET's chunked body goes as none on the terminating path (node:http's client): not compared.
  ['a chunked body', 'POST /refuse HTTP/1.1\r\nHost: app\r\nConnection: upgrade\r\nUpgrade: echo\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n'],
];

describe('an upgrade request through the HTTP/1.1 relay and through the terminating path', () => {
  let app: App;
  let planes: TestSidecar[];
  before(async () => {
    app = await startApp();
    const upstream = `http://127.0.0.1:${app.port}`;
    planes = [await startTestSidecar(upstream, ['--upstream-protocol', 'http1']), await startTestSidecar(upstream, RELAY)];
  });
  after(async () => {
    for (const sc of planes) await sc.stop();
    app.server.closeAllConnections();
    await new Promise((r) => app.server.close(r));
  });

  for (const [name, bytes] of SHAPES) {
    it(`reaches the app with the same head either way: ${name}`, async () => {
      const heads: string[][] = [];
      for (const sc of planes) {
        const client = net.connect(sc.port, '127.0.0.1');
        client.on('error', () => {});
        const answered = received(client, 'nope');
        client.write(bytes);
        assert.match(await answered, /^HTTP\/1\.1 426 /);
        heads.push(app.upgrades.at(-1)!.rawHeaders);
        client.destroy();
      }
      assert.deepEqual(heads[1], heads[0]);
    });
  }
});

/** The series both planes must agree on for the same calls (times and connections aside), as h1-relay.test.ts compares. */
const COMPARED = /^rpcscope_(calls_total|call_duration_seconds_count|call_bytes_total|payload_bytes_(count|sum)|upstream_calls_total|calls_active|connections_terminated_total)[{ ]/;

describe('a WebSocket through the HTTP/1.1 relay and through the terminating path', () => {
  it('leaves the same call series on /metrics', async () => {
    const app = await startApp();
    const series: string[][] = [];
    for (const plane of ['terminate', 'relay']) {
      const sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, '--http1-data-plane', plane, '--upstream-protocol', 'http1']);
      try {
        const client = await open(`ws://127.0.0.1:${sc.port}/ws/metrics`);
        const reply = nextMessage(client);
        client.send(Buffer.alloc(5000, 1));
        assert.equal((await reply).length, 5000);
        client.close(1000);
        await closed(client);
        // The call is counted once its tunnel has closed.
        let lines: string[] = [];
        for (let i = 0; i < 100; i++) {
          const text = await (await fetch(`${sc.adminUrl}/metrics`)).text();
          lines = text.split('\n').filter((l) => COMPARED.test(l)).sort();
          if (lines.some((l) => l.startsWith('rpcscope_calls_total'))) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        series.push(lines);
      } finally {
        await sc.stop();
      }
    }
    app.server.closeAllConnections();
    await new Promise((r) => app.server.close(r));
    assert.ok(series[0]!.some((l) => l.startsWith('rpcscope_call_bytes_total')), 'the bytes are compared');
    assert.ok(series[0]!.some((l) => l.startsWith('rpcscope_calls_total') && l.includes('"101"')), 'the terminating path counted the call, 101');
    assert.deepEqual(series[1], series[0]);
  });
});
