// The HTTP/1.1 relay (--http1-data-plane relay) keeps to --upstream-max-connections
// and --upstream-max-pending as the terminating path does: a keep-alive client
// idle between its requests hands its connection to the app over to a caller
// who waits for one, calls past the connections wait in the order they came,
// and a call past the queue is answered 503 at once, saying why, and counted in
// rpcscope_upstream_queue_overflow_total.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseExposition, sum } from '@rpcscope/demo/metrics-text';
import { startSidecarProcess, type SidecarProcess } from '@rpcscope/demo/sidecar-process';
import { RawClient } from '../support/raw-h1-client.ts';

const RELAY = ['--http1-data-plane', 'relay', '--upstream-protocol', 'http1'];
const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: app\r\n\r\n`;

interface App {
  url: string;
  /** Connections the app accepted. */
  connections: number;
  /** Paths in the order the app received them. */
  seen: string[];
  /** `/hold` calls waiting for release(). */
  held: http.ServerResponse[];
  release(): void;
  close(): void;
}

/** An HTTP/1.1 app answering each path with itself; `/hold` waits for release(). */
async function startApp(): Promise<App> {
  const app: App = {
    url: '',
    connections: 0,
    seen: [],
    held: [],
    release: () => {
      for (const res of app.held.splice(0)) res.end('/hold');
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    app.seen.push(req.url ?? '');
    req.resume();
    req.on('end', () => (req.url === '/hold' ? app.held.push(res) : res.end(req.url)));
  });
  server.on('connection', () => app.connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  app.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return app;
}

async function metric(sc: SidecarProcess, name: string, where: Record<string, string> = {}): Promise<number> {
  return sum(parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text()), name, where);
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`never: ${what}`);
}

describe('the HTTP/1.1 relay with --upstream-max-connections 1', () => {
  let app: App;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp();
    sc = await startSidecarProcess(['--upstream', app.url, ...RELAY, '--upstream-max-connections', '1']);
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('serves a second keep-alive client over the one connection the first holds idle, and the first again after it', async () => {
    const first = new RawClient(sc.port);
    const second = new RawClient(sc.port);
    const bodies = async (client: RawClient, path: string): Promise<string[]> => (await client.send(get(path), ['GET'])).map((a) => `${a.status} ${a.body.toString()}`);
    assert.deepEqual(await bodies(first, '/a'), ['200 /a']);
    assert.deepEqual(await bodies(second, '/b'), ['200 /b'], 'not kept waiting by the first client, idle between its requests');
    assert.deepEqual(await bodies(first, '/c'), ['200 /c']);
    assert.deepEqual(await bodies(second, '/d'), ['200 /d']);
    assert.equal(app.connections, 1, 'one connection to the app, handed between the clients');
    assert.deepEqual([first.isClosed, second.isClosed], [false, false], 'both clients keep their connections');
    first.close();
    second.close();
    assert.equal(await metric(sc, 'rpcscope_calls_total', { code: 'OK' }), 4);
  });
});

describe('the HTTP/1.1 relay with --upstream-max-connections 1 and --upstream-max-pending 2', () => {
  let app: App;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp();
    sc = await startSidecarProcess(['--upstream', app.url, ...RELAY, '--upstream-max-connections', '1', '--upstream-max-pending', '2']);
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('queues the calls past the connection in order, answers the one past the queue 503 and counts it', async () => {
    const holding = new RawClient(sc.port);
    const held = holding.send(get('/hold'), ['GET'], 30_000);
    await until(() => app.held.length === 1, 'the app holds the first call');
    const waiting = [new RawClient(sc.port), new RawClient(sc.port)];
    const queued: Promise<{ status: number; body: Buffer }[]>[] = [];
    for (const [i, client] of waiting.entries()) {
      queued.push(client.send(get(`/queued/${i}`), ['GET'], 30_000));
      await until(async () => (await metric(sc, 'rpcscope_calls_active')) === 2 + i, `call ${i} waiting`);
    }
    const refused = await new RawClient(sc.port).send(get('/refused'), ['GET']);
    assert.equal(refused[0]!.status, 503);
    assert.match(refused[0]!.body.toString(), /--upstream-max-pending/, 'the answer says why');
    assert.deepEqual(app.seen, ['/hold'], 'nothing more reached the app while its connection was busy');

    app.release();
    assert.equal((await held)[0]!.status, 200);
    const answers = await Promise.all(queued);
    assert.deepEqual(answers.map((a) => `${a[0]!.status} ${a[0]!.body.toString()}`), ['200 /queued/0', '200 /queued/1']);
    assert.deepEqual(app.seen, ['/hold', '/queued/0', '/queued/1'], 'in the order they came');
    assert.equal(app.connections, 1, 'the waiting calls went over the one connection');
    holding.close();
    for (const c of waiting) c.close();

    assert.equal(await metric(sc, 'rpcscope_upstream_queue_overflow_total'), 1);
    assert.equal(await metric(sc, 'rpcscope_calls_total', { code: 'UNAVAILABLE' }), 1);
    assert.equal(await metric(sc, 'rpcscope_calls_total', { code: 'OK' }), 3);
    await until(async () => (await metric(sc, 'rpcscope_calls_active')) === 0, 'no call left active');
  });
});
