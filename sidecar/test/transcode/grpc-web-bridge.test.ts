// gRPC-Web callers (binary and base64 text, over HTTP/1.1 with fetch) served by a
// grpc-js upstream, which speaks no gRPC-Web, through the sidecar's bridge; the
// CORS preflight; and the translation metrics scraped from the admin port.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { loadStartFiles } from '../../src/config/start-files.ts';
import { createLogger } from '../../src/log.ts';
import { createObservation } from '../../src/observe/observation.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';
import { SHOP_PROTO_DIR, SHOP_ROOT, startShopServer, type ShopServer } from './shop-server.ts';

const ORIGIN = 'http://app.example';

function framed(typeName: string, obj: Record<string, unknown>): Buffer {
  const type = SHOP_ROOT.lookupType(typeName);
  const bytes = type.encode(type.fromObject(obj)).finish();
  const head = Buffer.alloc(5);
  head.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}

/** The frames of a gRPC-Web body: messages decoded as `typeName`, and the trailer frame's lines. */
function parseBody(body: Buffer, typeName: string): { messages: Record<string, unknown>[]; trailers: Record<string, string> } {
  const type = SHOP_ROOT.lookupType(typeName);
  const messages: Record<string, unknown>[] = [];
  const trailers: Record<string, string> = {};
  let at = 0;
  while (at < body.length) {
    const flags = body[at]!;
    const length = body.readUInt32BE(at + 1);
    const payload = body.subarray(at + 5, at + 5 + length);
    at += 5 + length;
    if (flags & 0x80) {
      for (const line of payload.toString('latin1').split('\r\n').filter(Boolean)) {
        const colon = line.indexOf(':');
        trailers[line.slice(0, colon)] = line.slice(colon + 1);
      }
    } else messages.push(type.toObject(type.decode(payload), { longs: String, enums: String }));
  }
  return { messages, trailers };
}

describe('gRPC-Web bridged to a grpc-js upstream', () => {
  let shop: ShopServer;
  let sidecar: Sidecar;
  let url: string;
  let admin: string;

  before(async () => {
    shop = await startShopServer();
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', `http://127.0.0.1:${shop.port}`, '--log-level', 'silent', '--proto', SHOP_PROTO_DIR, '--transcode', '--grpc-web-bridge', '--cors-origin', ORIGIN], {});
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
  });

  it('carries a unary call, with its trailers in the trailer frame', async () => {
    const res = await fetch(`${url}/shop.v1.Shop/GetItem`, { method: 'POST', headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', origin: ORIGIN }, body: framed('shop.v1.GetItemRequest', { name: 'a/b' }) });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/grpc-web+proto');
    assert.equal(res.headers.get('x-served-by'), 'grpc-js');
    assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
    const { messages, trailers } = parseBody(Buffer.from(await res.arrayBuffer()), 'shop.v1.Item');
    assert.equal(messages.length, 1);
    assert.equal(messages[0]!.name, 'a/b');
    assert.equal(messages[0]!.price_micros, '9007199254740993');
    // grpc-js sends grpc-message "OK" with every success.
    assert.deepEqual(trailers, { 'grpc-status': '0', 'grpc-message': 'OK', 'x-trail': 'ok' });
  });

  it('carries an error status and message', async () => {
    const res = await fetch(`${url}/shop.v1.Shop/Fail`, { method: 'POST', headers: { 'content-type': 'application/grpc-web+proto' }, body: framed('shop.v1.FailRequest', { code: 7, message: 'not yours: 100%' }) });
    const { messages, trailers } = parseBody(Buffer.from(await res.arrayBuffer()), 'shop.v1.Item');
    assert.equal(messages.length, 0);
    assert.equal(trailers['grpc-status'], '7');
    assert.equal(decodeURIComponent(trailers['grpc-message']!), 'not yours: 100%');
    assert.equal(trailers['x-why'], 'asked');
  });

  it('carries a server stream in base64 text mode', async () => {
    const body = framed('shop.v1.WatchItemsRequest', { shelf_id: 's1', count: 3 }).toString('base64');
    const res = await fetch(`${url}/shop.v1.Shop/WatchItems`, { method: 'POST', headers: { 'content-type': 'application/grpc-web-text', accept: 'application/grpc-web-text' }, body });
    assert.equal(res.headers.get('content-type'), 'application/grpc-web-text');
    const text = await res.text();
    // Each frame is its own padded base64 segment.
    const bytes = Buffer.concat(text.match(/[A-Za-z0-9+/]+={0,2}/gu)!.map((s) => Buffer.from(s, 'base64')));
    const { messages, trailers } = parseBody(bytes, 'shop.v1.Item');
    assert.deepEqual(messages.map((m) => m.name), ['shelves/s1/items/0', 'shelves/s1/items/1', 'shelves/s1/items/2']);
    assert.equal(trailers['grpc-status'], '0');
  });

  it('answers a CORS preflight from a configured origin, and leaves others to the upstream', async () => {
    const res = await fetch(`${url}/shop.v1.Shop/GetItem`, { method: 'OPTIONS', headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-grpc-web' } });
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('access-control-allow-origin'), ORIGIN);
    assert.equal(res.headers.get('access-control-allow-headers'), 'content-type,x-grpc-web');
    assert.match(res.headers.get('access-control-allow-methods')!, /POST/u);
    const other = await fetch(`${url}/shop.v1.Shop/GetItem`, { method: 'OPTIONS', headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  it('counts translated calls by translation and operation, and the time spent translating', async () => {
    await fetch(`${url}/v1/items/i1`);
    const text = await (await fetch(`${admin}/metrics`)).text();
    assert.match(text, /^rpcscope_translated_calls_total\{protocol="grpc_web",translation="grpc_web_to_grpc",operation="shop.v1.Shop\/GetItem"\} 1$/mu);
    assert.match(text, /^rpcscope_translated_calls_total\{protocol="grpc_web",translation="grpc_web_to_grpc",operation="shop.v1.Shop\/WatchItems"\} 1$/mu);
    assert.match(text, /^rpcscope_translated_calls_total\{protocol="rest",translation="rest_to_grpc",operation="shop.v1.Shop\/GetItem"\} 1$/mu);
    assert.match(text, /^rpcscope_translation_seconds_count\{translation="rest_to_grpc"\} 1$/mu);
    assert.match(text, /^rpcscope_translation_seconds_count\{translation="grpc_web_to_grpc"\} 3$/mu);
    // The call metrics keep the caller's protocol.
    assert.match(text, /^rpcscope_calls_total\{[^}]*protocol="grpc_web"[^}]*\} \d+$/mu);
  });
});
