// The keep-alive race on the HTTP/1.1 relay (--http1-data-plane relay): a real
// node:http app closes its end of a kept connection, idle or just as the next
// request arrives, and a raw keep-alive client behind the sidecar sees what RFC
// 9112 §9.3.1 allows: its connection stays, an idempotent request is sent again
// once on a new connection and answered, a POST is not sent twice and is
// answered 502, pipelined requests are answered in order, and /metrics counts
// each call once with its final status.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startSidecarProcess, type SidecarProcess } from '@rpcscope/demo/sidecar-process';
import { RawClient } from '../support/raw-h1-client.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const RELAY = ['--http1-data-plane', 'relay', '--upstream-protocol', 'http1'];

/** A client connection's send, its answers' status and body as text. */
async function exchange(client: RawClient, bytes: string, methods: readonly string[]): Promise<{ status: number; body: string }[]> {
  return (await client.send(bytes, methods)).map((a) => ({ status: a.status, body: a.body.toString() }));
}

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: app\r\n\r\n`;
const post = (path: string, body: string): string => `POST ${path} HTTP/1.1\r\nHost: app\r\nContent-Length: ${body.length}\r\n\r\n${body}`;

interface App {
  readonly server: http.Server;
  port: number;
  /** `METHOD /path` of every request the app read the head of, dropped ones included. */
  readonly seen: string[];
  /** Connections the app accepted. */
  connections: number;
  /** The connection each `METHOD /path` came on. */
  readonly socketOf: Map<string, net.Socket>;
  /** Connections closed, by either side. */
  readonly closed: WeakSet<net.Socket>;
  /**
   * The next request that comes on a connection which already carried one has
   * its connection closed, unanswered, right after its head is read: once.
   */
  dropNextReused: boolean;
}

async function startApp(keepAliveTimeout: number): Promise<App> {
  const served = new WeakMap<net.Socket, number>();
  const app: App = {
    server: http.createServer({ keepAliveTimeout }, (req, res) => {
      app.seen.push(`${req.method} ${req.url}`);
      app.socketOf.set(`${req.method} ${req.url}`, req.socket);
      const n = served.get(req.socket) ?? 0;
      served.set(req.socket, n + 1);
      if (app.dropNextReused && n > 0) {
        app.dropNextReused = false;
        return void req.socket.destroy();
      }
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => res.end(`${req.method} ${req.url} ${Buffer.concat(parts).toString()}`.trim()));
    }),
    port: 0,
    seen: [],
    connections: 0,
    socketOf: new Map(),
    closed: new WeakSet(),
    dropNextReused: false,
  };
  app.server.on('connection', (s: net.Socket) => {
    app.connections++;
    s.once('close', () => app.closed.add(s));
  });
  await new Promise<void>((r) => app.server.listen(0, '127.0.0.1', r));
  app.port = (app.server.address() as AddressInfo).port;
  return app;
}

async function until(what: string, ok: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function stopApp(app: App): Promise<void> {
  app.server.closeAllConnections();
  await new Promise((r) => app.server.close(r));
}

const seenCount = (app: App, line: string): number => app.seen.filter((s) => s === line).length;

describe('the HTTP/1.1 relay when the app closes an idle kept connection', () => {
  let app: App;
  let sc: TestSidecar;
  before(async () => {
    app = await startApp(200);
    sc = await startTestSidecar(`http://127.0.0.1:${app.port}`, RELAY);
  });
  after(async () => {
    await sc.stop();
    await stopApp(app);
  });

  it('keeps the client connection, and the next GET goes on a new upstream connection', async () => {
    const client = new RawClient(sc.port);
    assert.deepEqual(await exchange(client, get('/a1'), ['GET']), [{ status: 200, body: 'GET /a1' }]);
    // The app's 200 ms keep-alive timeout closes its end of the idle connection.
    await until('the app closed its idle connection', () => app.closed.has(app.socketOf.get('GET /a1')!));
    assert.deepEqual(await exchange(client, get('/a2'), ['GET']), [{ status: 200, body: 'GET /a2' }]);
    assert.equal(client.isClosed, false, 'the client connection stayed open');
    assert.equal(app.connections, 2);
    assert.equal(seenCount(app, 'GET /a2'), 1);
    client.close();
  });
});

describe('the HTTP/1.1 relay when the app closes a kept connection as a request arrives', () => {
  let app: App;
  let sc: SidecarProcess;
  before(async () => {
    // Idle connections stay a minute: the app closes one only when told to.
    app = await startApp(60_000);
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${app.port}`, ...RELAY]);
  });
  after(async () => {
    await sc.stop();
    await stopApp(app);
  });

  it('sends a GET again once on a new connection, and answers it 200 on the same client connection', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/b1'), ['GET']))[0]!.status, 200);
    const connections = app.connections;
    app.dropNextReused = true;
    assert.deepEqual(await exchange(client, get('/b2'), ['GET']), [{ status: 200, body: 'GET /b2' }]);
    assert.equal(app.dropNextReused, false, 'the app dropped the request once');
    assert.equal(seenCount(app, 'GET /b2'), 2, 'the app read the GET twice');
    assert.equal(app.connections, connections + 1, 'the retry went on a new connection');
    assert.deepEqual(await exchange(client, get('/b3'), ['GET']), [{ status: 200, body: 'GET /b3' }]);
    assert.equal(client.isClosed, false);
    client.close();
  });

  it('answers a POST 502 without sending it twice, and keeps the client connection', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/c1'), ['GET']))[0]!.status, 200);
    app.dropNextReused = true;
    assert.equal((await exchange(client, post('/c2', 'once'), ['POST']))[0]!.status, 502);
    assert.equal(seenCount(app, 'POST /c2'), 1, 'the POST reached the app once');
    assert.deepEqual(await exchange(client, get('/c3'), ['GET']), [{ status: 200, body: 'GET /c3' }]);
    client.close();
  });

  it('answers requests pipelined behind a lost one in order, the safe ones sent again', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/e1'), ['GET']))[0]!.status, 200);
    app.dropNextReused = true;
    const got = await exchange(client, get('/e2') + post('/e3', 'x') + get('/e4'), ['GET', 'POST', 'GET']);
    assert.deepEqual(got, [
      { status: 200, body: 'GET /e2' },
      { status: 200, body: 'POST /e3 x' },
      { status: 200, body: 'GET /e4' },
    ]);
    assert.equal(seenCount(app, 'GET /e2'), 2);
    assert.equal(seenCount(app, 'POST /e3'), 1);
    client.close();
  });

  it('a POST lost ahead of pipelined requests is answered 502, and those behind it are answered in order', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/f1'), ['GET']))[0]!.status, 200);
    app.dropNextReused = true;
    const got = await exchange(client, post('/f2', 'y') + get('/f3'), ['POST', 'GET']);
    assert.deepEqual(got, [
      { status: 502, body: got[0]!.body },
      { status: 200, body: 'GET /f3' },
    ]);
    assert.equal(seenCount(app, 'POST /f2'), 1);
    client.close();
  });

  it('sends a PUT again with its body, and answers a PUT whose body outgrew the held copy 502', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/g1'), ['GET']))[0]!.status, 200);
    app.dropNextReused = true;
    const put = (path: string, body: string): string => `PUT ${path} HTTP/1.1\r\nHost: app\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
    assert.deepEqual(await exchange(client, put('/g2', 'abc'), ['PUT']), [{ status: 200, body: 'PUT /g2 abc' }]);
    assert.equal(seenCount(app, 'PUT /g2'), 2);
    // 70 KiB: past the 64 KiB the relay holds of a body to send again.
    assert.equal((await exchange(client, get('/g3'), ['GET']))[0]!.status, 200);
    app.dropNextReused = true;
    assert.equal((await exchange(client, put('/g4', 'z'.repeat(70 * 1024)), ['PUT']))[0]!.status, 502);
    assert.equal(seenCount(app, 'PUT /g4'), 1, 'the large PUT reached the app once');
    client.close();
  });

  it('closes an upstream connection idle past 4 s itself, before the app would, and keeps the client connection', async () => {
    const client = new RawClient(sc.port);
    assert.equal((await exchange(client, get('/h1'), ['GET']))[0]!.status, 200);
    const connections = app.connections;
    const carried = app.socketOf.get('GET /h1')!;
    // The app keeps idle connections a minute: a close within 10 s is the relay's.
    await until('the relay closed the idle upstream connection', () => app.closed.has(carried), 10_000);
    assert.deepEqual(await exchange(client, get('/h2'), ['GET']), [{ status: 200, body: 'GET /h2' }]);
    assert.equal(app.connections, connections + 1);
    assert.equal(client.isClosed, false);
    client.close();
  });

  it('counts each call once on /metrics, with its final status, and the retries', async () => {
    let text = '';
    let calls: Record<string, number> = {};
    // A call is counted as it ends, which may follow its answer by a moment.
    for (let i = 0; i < 250; i++) {
      text = await (await fetch(`${sc.adminUrl}/metrics`)).text();
      calls = {};
      for (const m of text.matchAll(/^rpcscope_calls_total\{([^}]*)\} (\d+)/gmu)) {
        const key = `${/(?:^|,)method="([^"]*)"/u.exec(m[1]!)?.[1]} ${/http_status="([^"]*)"/u.exec(m[1]!)?.[1]}`;
        calls[key] = (calls[key] ?? 0) + Number(m[2]);
      }
      if (Object.values(calls).reduce((a, b) => a + b, 0) >= 19) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    // Each call once (REST calls are named by method and path), with its final status: the retried GETs 200.
    assert.deepEqual(calls, {
      'GET /b1 200': 1, 'GET /b2 200': 1, 'GET /b3 200': 1,
      'GET /c1 200': 1, 'POST /c2 502': 1, 'GET /c3 200': 1,
      'GET /e1 200': 1, 'GET /e2 200': 1, 'POST /e3 200': 1, 'GET /e4 200': 1,
      'GET /f1 200': 1, 'POST /f2 502': 1, 'GET /f3 200': 1,
      'GET /g1 200': 1, 'PUT /g2 200': 1, 'GET /g3 200': 1, 'PUT /g4 502': 1,
      'GET /h1 200': 1, 'GET /h2 200': 1,
    });
    assert.match(text, /^rpcscope_upstream_retries_total\{reason="connection_closed"\} 3$/mu);
  });
});
