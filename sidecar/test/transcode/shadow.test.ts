// --shadow: two REST apps that differ on one route, and two grpc-js services,
// behind one sidecar; the caller sees only the primary, and the comparison shows
// on /metrics and in the log.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';
import { SHOP_SERVICE, startShopServer, type ShopServer } from './shop-server.ts';

/** A REST app; `version` 2 prices order 7 differently and answers /slow late. */
async function startRestApp(version: 1 | 2): Promise<{ port: number; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      calls.push(`${req.method} ${req.url} ${body}`);
      if (req.url === '/slow') {
        if (version === 2) return; // never answers: the shadow's own timeout, not the caller, pays for it
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end('{"ok":true}');
      }
      if (req.url === '/v1/orders/404') {
        res.writeHead(version === 1 ? 404 : 200, { 'content-type': 'application/json' });
        return res.end('{}');
      }
      const id = req.url!.split('/').pop()!;
      const order = { id, lines: [{ sku: 'A', price: id === '7' && version === 2 ? 11 : 10 }], note: body === '' ? null : (JSON.parse(body) as unknown) };
      res.writeHead(200, { 'content-type': 'application/json', 'x-version': String(version) });
      // Key order differs between the versions: the comparison is by value.
      res.end(version === 1 ? JSON.stringify(order) : JSON.stringify({ note: order.note, lines: order.lines, id }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    calls,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function metric(admin: string, pattern: RegExp, want: number): Promise<string> {
  // The mirror runs after the caller is answered: wait for it to be counted.
  const deadline = Date.now() + 5000;
  for (;;) {
    const text = await (await fetch(`${admin}/metrics`)).text();
    const m = pattern.exec(text);
    if ((m && Number(m[1]) >= want) || Date.now() > deadline) return text;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function start(upstream: string, shadow: string, lines: string[], extra: string[] = []): Promise<{ sidecar: Sidecar; url: string; admin: string }> {
  const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstream, '--shadow', shadow, '--log-level', 'warn', ...extra], {});
  assert.equal(result.kind, 'run');
  const config = result.kind === 'run' ? result.config : (undefined as never);
  const log = createLogger('warn', (l) => lines.push(l));
  const sidecar = await startSidecar(config, log, (known, faults, router) => createObservation(config, router, log, {}, known, faults));
  return { sidecar, url: `http://127.0.0.1:${sidecar.proxyAddress.port}`, admin: `http://127.0.0.1:${sidecar.adminAddress.port}` };
}

describe('--shadow with two REST apps that differ on one route', () => {
  let v1: Awaited<ReturnType<typeof startRestApp>>;
  let v2: Awaited<ReturnType<typeof startRestApp>>;
  let sc: Awaited<ReturnType<typeof start>>;
  const lines: string[] = [];

  before(async () => {
    v1 = await startRestApp(1);
    v2 = await startRestApp(2);
    sc = await start(`http://127.0.0.1:${v1.port}`, `http://127.0.0.1:${v2.port}`, lines);
  });
  after(async () => {
    await sc.sidecar.drain();
    await v1.close();
    await v2.close();
  });

  it('counts matching answers, and names the first differing field of the one that differs', async () => {
    for (const id of ['1', '2', '3']) {
      const res = await fetch(`${sc.url}/v1/orders/${id}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ gift: true }) });
      assert.equal(res.headers.get('x-version'), '1');
      assert.deepEqual(await res.json(), { id, lines: [{ sku: 'A', price: 10 }], note: { gift: true } });
    }
    const differing = await fetch(`${sc.url}/v1/orders/7`);
    assert.equal(differing.headers.get('x-version'), '1');
    assert.equal(((await differing.json()) as { lines: { price: number }[] }).lines[0]!.price, 10);

    const text = await metric(sc.admin, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="mismatch"\} (\d+)$/mu, 1);
    assert.match(text, /^rpcscope_shadow_calls_total\{operation="POST \/v1\/orders\/\{id\}",result="match"\} 3$/mu);
    assert.match(text, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="mismatch"\} 1$/mu);
    // The shadow's operation is the call's own, as rpcscope_calls_total labels it, so the two join.
    for (const operation of ['GET /v1/orders/{id}', 'POST /v1/orders/{id}']) {
      assert.ok(text.split('\n').some((l) => l.startsWith('rpcscope_calls_total{') && l.includes(`operation="${operation}"`)), `rpcscope_calls_total has operation="${operation}"`);
    }
    // The shadow saw the same requests, bodies included.
    assert.deepEqual(v2.calls.slice(0, 4), v1.calls.slice(0, 4));
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === 'shadow answer differs');
    assert.deepEqual({ operation: logged?.operation, field: logged?.field, primary: logged?.primary, shadow: logged?.shadow }, { operation: 'GET /v1/orders/{id}', field: '$.lines[0].price', primary: '10', shadow: '11' });
  });

  it('compares status codes too', async () => {
    assert.equal((await fetch(`${sc.url}/v1/orders/404`)).status, 404);
    await metric(sc.admin, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="mismatch"\} (\d+)$/mu, 2);
    const text = await (await fetch(`${sc.admin}/metrics`)).text();
    assert.match(text, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="mismatch"\} 2$/mu);
  });

  it('answers the caller at the primary\'s pace when the shadow never answers', async () => {
    const t0 = performance.now();
    const res = await fetch(`${sc.url}/slow`);
    assert.deepEqual(await res.json(), { ok: true });
    // Not a timing target: the shadow would hold the caller for its whole 10 s timeout.
    assert.ok(performance.now() - t0 < 5000);
  });
});

describe('--shadow with a shadow that is down', () => {
  it('counts an error and still answers the caller from the primary', async () => {
    const v1 = await startRestApp(1);
    const dead = http.createServer();
    await new Promise<void>((resolve) => dead.listen(0, '127.0.0.1', resolve));
    const deadPort = (dead.address() as AddressInfo).port;
    await new Promise<void>((resolve) => dead.close(() => resolve()));
    const lines: string[] = [];
    const sc = await start(`http://127.0.0.1:${v1.port}`, `http://127.0.0.1:${deadPort}`, lines);
    try {
      assert.equal((await fetch(`${sc.url}/v1/orders/1`)).status, 200);
      const text = await metric(sc.admin, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="error"\} (\d+)$/mu, 1);
      assert.match(text, /^rpcscope_shadow_calls_total\{operation="GET \/v1\/orders\/\{id\}",result="error"\} 1$/mu);
      assert.ok(lines.some((l) => (JSON.parse(l) as { msg: string }).msg === 'shadow call failed'));
    } finally {
      await sc.sidecar.drain();
      await v1.close();
    }
  });
});

describe('--shadow with two grpc-js services', () => {
  let primary: ShopServer;
  let second: ShopServer;
  let sc: Awaited<ReturnType<typeof start>>;
  const lines: string[] = [];

  before(async () => {
    primary = await startShopServer();
    second = await startShopServer();
    sc = await start(`http://127.0.0.1:${primary.port}`, `http://127.0.0.1:${second.port}`, lines);
  });
  after(async () => {
    await sc.sidecar.drain();
    await primary.close();
    await second.close();
  });

  it('mirrors unary calls, matching answers and statuses alike', async () => {
    const Client = grpc.makeGenericClientConstructor(SHOP_SERVICE, 'Shop');
    const client = new Client(`127.0.0.1:${sc.sidecar.proxyAddress.port}`, grpc.credentials.createInsecure());
    const get = (name: string): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) => (client as unknown as Record<string, (req: object, cb: (err: grpc.ServiceError | null) => void) => void>).GetItem!({ name }, (err) => resolve(err)));
    try {
      assert.equal(await get('a/1'), null);
      assert.equal((await get('missing-1'))?.code, grpc.status.NOT_FOUND);
      const text = await metric(sc.admin, /^rpcscope_shadow_calls_total\{operation="shop.v1.Shop\/GetItem",result="match"\} (\d+)$/mu, 2);
      assert.match(text, /^rpcscope_shadow_calls_total\{operation="shop.v1.Shop\/GetItem",result="match"\} 2$/mu);
      assert.deepEqual(second.last.get('GetItem'), { name: 'missing-1' });
    } finally {
      client.close();
    }
  });
});
