// The HTTP/1.1 relay beside a translating path (--split): a plain REST app and a
// grpc-js service behind one sidecar. Calls the relay can carry go on its one
// upstream connection; a call that needs one of its own (transcoded to the gRPC
// service) hands its client connection, at that request's head, to the
// terminating path, which answers it and the calls after it. Which plane carried
// a call shows at the app: the relay passes an HTTP/1.0 request line on as it
// came, the terminating path asks the app in HTTP/1.1.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { loadStartFiles } from '../../src/config/start-files.ts';
import { createLogger } from '../../src/log.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';
import { RawClient } from '../support/raw-h1-client.ts';
import { SHOP_PROTO_DIR, startShopServer, type ShopServer } from '../transcode/shop-server.ts';

/** A REST app that answers every path with it and the HTTP version it was asked in. */
async function startRestApp(): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume();
    // Of known length: an HTTP/1.0 caller's connection is kept only then.
    const body = JSON.stringify({ path: req.url, version: req.httpVersion });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-served-by': 'rest-app' });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** An HTTP/1.0 GET that asks to keep its connection. */
const get10 = (path: string): string => `GET ${path} HTTP/1.0\r\nHost: shop\r\nConnection: keep-alive\r\n\r\n`;

describe('the HTTP/1.1 relay beside --split', () => {
  let shop: ShopServer;
  let app: Awaited<ReturnType<typeof startRestApp>>;
  let sidecar: Sidecar;
  let admin: string;

  before(async () => {
    shop = await startShopServer();
    app = await startRestApp();
    const args = ['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--log-level', 'silent', '--upstream', `http://127.0.0.1:${app.port}`, '--upstream-protocol', 'http1', '--http1-data-plane', 'relay'];
    args.push('--grpc-upstream', `http://127.0.0.1:${shop.port}`, '--proto', SHOP_PROTO_DIR, '--split', 'shop.v1.Shop/GetItem=100');
    const result = loadConfig(args, {});
    assert.equal(result.kind, 'run');
    const config = result.kind === 'run' ? result.config : (undefined as never);
    const log = createLogger('silent');
    sidecar = await startSidecar(config, log, (known, faults, router) => createObservation(config, router, log, {}, known, faults), { files: loadStartFiles(config) });
    admin = `http://127.0.0.1:${sidecar.adminAddress.port}`;
  });
  after(async () => {
    await sidecar.drain();
    await shop.close();
    await app.close();
  });

  /** Calls on /metrics (a REST method's label holds braces: `GET /v2/plain/{id}`). */
  async function callsTotal(): Promise<number> {
    const text = await (await fetch(`${admin}/metrics`)).text();
    return [...text.matchAll(/^rpcscope_calls_total\{.*\} (\d+)$/gmu)].reduce((n, m) => n + Number(m[1]), 0);
  }

  it('relays plain calls, hands the connection to the terminating path at a transcoded call, and counts each call once', async () => {
    const before = await callsTotal();
    const client = new RawClient(sidecar.proxyAddress.port);
    try {
      const [plain] = await client.send(get10('/v2/plain/1'), ['GET']);
      assert.equal(plain!.status, 200);
      assert.deepEqual(JSON.parse(plain!.body.toString()), { path: '/v2/plain/1', version: '1.0' }, 'relayed: the request line went on as it came');

      const [item] = await client.send(get10('/v1/items/i7'), ['GET']);
      assert.equal(item!.status, 200);
      assert.match(item!.raw.toString('latin1'), /\r\nx-served-by: grpc-js\r\n/iu);
      assert.equal((JSON.parse(item!.body.toString()) as { name: string }).name, 'i7', 'transcoded: the proto3 JSON of the Item');

      const [after] = await client.send(get10('/v2/plain/2'), ['GET']);
      assert.equal(after!.status, 200);
      assert.deepEqual(JSON.parse(after!.body.toString()), { path: '/v2/plain/2', version: '1.1' }, 'terminated from the hand-over on: asked anew in HTTP/1.1');
      assert.equal(client.isClosed, false, 'one client connection carried all three');
    } finally {
      client.close();
    }
    let total = await callsTotal();
    for (let i = 0; i < 50 && total - before < 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      total = await callsTotal();
    }
    assert.equal(total - before, 3);
  });

  it('hands over at a connection\'s first request, pipelined requests behind it and all', async () => {
    const client = new RawClient(sidecar.proxyAddress.port);
    try {
      const answers = await client.send(get10('/v1/items/i8') + get10('/v2/plain/3'), ['GET', 'GET']);
      assert.deepEqual(answers.map((a) => a.status), [200, 200]);
      assert.equal((JSON.parse(answers[0]!.body.toString()) as { name: string }).name, 'i8');
      assert.deepEqual(JSON.parse(answers[1]!.body.toString()), { path: '/v2/plain/3', version: '1.1' });
    } finally {
      client.close();
    }
  });
});
