// --split: a plain REST app and a grpc-js service behind one sidecar, a share of
// one operation's REST calls transcoded to the gRPC service, the rest left to the
// REST app; the share seen by the caller and on /metrics.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError } from '../../src/config/parse-value.ts';
import { loadStartFiles } from '../../src/config/start-files.ts';
import { createLogger } from '../../src/log.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';
import { SHOP_PROTO_DIR, startShopServer, type ShopServer } from './shop-server.ts';

/** The REST app the operation is served by before the migration: it answers every path with who it is. */
async function startRestApp(): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-served-by': 'rest-app' });
    res.end(JSON.stringify({ name: req.url }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

function configFor(args: string[]): ReturnType<typeof loadConfig> {
  return loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--log-level', 'silent', ...args], {});
}

describe('--split between a REST app and a gRPC service', () => {
  let shop: ShopServer;
  let app: Awaited<ReturnType<typeof startRestApp>>;
  let sidecar: Sidecar;
  let url: string;
  let admin: string;

  before(async () => {
    shop = await startShopServer();
    app = await startRestApp();
    const result = configFor(['--upstream', `http://127.0.0.1:${app.port}`, '--grpc-upstream', `http://127.0.0.1:${shop.port}`, '--proto', SHOP_PROTO_DIR, '--split', 'shop.v1.Shop/GetItem=30', '--split', 'shop.v1.Shop/ListItems=0%']);
    assert.equal(result.kind, 'run');
    const config = result.kind === 'run' ? result.config : (undefined as never);
    const files = loadStartFiles(config);
    const log = createLogger('silent');
    sidecar = await startSidecar(config, log, (known, faults, router) => createObservation(config, router, log, {}, known, faults), { files });
    url = `http://127.0.0.1:${sidecar.proxyAddress.port}`;
    admin = `http://127.0.0.1:${sidecar.adminAddress.port}`;
  });
  after(async () => {
    await sidecar.drain();
    await shop.close();
    await app.close();
  });

  it('sends 30 of 100 calls at 30 % to the gRPC service, evenly, and the rest to the REST app', async () => {
    const servedBy: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${url}/v1/items/i${i}`);
      assert.equal(res.status, 200);
      const who = res.headers.get('x-served-by')!;
      const body = (await res.json()) as { name: string };
      // Both paths answer for the same item: the transcoded one with the proto3 JSON of the Item.
      assert.equal(body.name, who === 'grpc-js' ? `i${i}` : `/v1/items/i${i}`);
      servedBy.push(who);
    }
    assert.equal(servedBy.filter((w) => w === 'grpc-js').length, 30);
    assert.equal(servedBy.filter((w) => w === 'rest-app').length, 70);
    // Spread, not bunched: every ten calls hold three transcoded ones.
    for (let k = 0; k < 100; k += 10) assert.equal(servedBy.slice(k, k + 10).filter((w) => w === 'grpc-js').length, 3);

    // An operation at 0 % and a route no rule binds stay with the REST app.
    assert.equal((await fetch(`${url}/v1/shelves/s1/items`)).headers.get('x-served-by'), 'rest-app');
    assert.equal((await fetch(`${url}/v2/elsewhere`)).headers.get('x-served-by'), 'rest-app');

    const text = await (await fetch(`${admin}/metrics`)).text();
    assert.match(text, /^rpcscope_translated_calls_total\{protocol="rest",translation="rest_to_grpc",operation="shop.v1.Shop\/GetItem"\} 30$/mu);
    assert.doesNotMatch(text, /rpcscope_translated_calls_total\{[^}]*ListItems/u);
  });
});

describe('--split settings', () => {
  it('refuses an operation no google.api.http rule binds, naming the bound ones', async () => {
    const result = configFor(['--upstream', 'http://127.0.0.1:1', '--grpc-upstream', 'http://127.0.0.1:2', '--proto', SHOP_PROTO_DIR, '--split', 'shop.v1.Shop/GetItems=10']);
    assert.equal(result.kind, 'run');
    const config = result.kind === 'run' ? result.config : (undefined as never);
    await assert.rejects(
      startSidecar(config, createLogger('silent'), (known, faults, router) => createObservation(config, router, createLogger('silent'), {}, known, faults)),
      (err: Error) => err instanceof ConfigError && /--split: shop\.v1\.Shop\/GetItems is no method with a google\.api\.http rule .*shop\.v1\.Shop\/GetItem,/u.test(err.message),
    );
  });

  it('refuses a bad percentage, a missing --grpc-upstream, and takes a comma-separated list', () => {
    const base = ['--upstream', 'http://127.0.0.1:1', '--proto', SHOP_PROTO_DIR];
    assert.throws(() => configFor([...base, '--grpc-upstream', 'http://127.0.0.1:2', '--split', 'shop.v1.Shop/GetItem=130']), /--split: invalid value "shop.v1.Shop\/GetItem=130"/u);
    assert.throws(() => configFor([...base, '--grpc-upstream', 'http://127.0.0.1:2', '--split', 'shop.v1.Shop/GetItem']), /expected OPERATION=PERCENT/u);
    assert.throws(() => configFor([...base, '--split', 'shop.v1.Shop/GetItem=5']), /--split: needs --proto .* and --grpc-upstream/u);
    const ok = configFor([...base, '--grpc-upstream', 'http://127.0.0.1:2', '--split', 'shop.v1.Shop/GetItem=12.5, shop.v1.Shop/ListItems=1%']);
    assert.deepEqual(ok.kind === 'run' ? [...ok.config.split] : [], [['shop.v1.Shop/GetItem', 12.5], ['shop.v1.Shop/ListItems', 1]]);
  });
});
