// REST callers (fetch over HTTP/1.1, curl over h2c) served by a grpc-js upstream
// through the sidecar's transcoding of the google.api.http rules.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';
import { SHOP_PROTO_DIR, startShopServer, type ShopServer } from './shop-server.ts';

const run = promisify(execFile);

async function curl(args: string[]): Promise<{ status: number; headers: string; body: string }> {
  const { stdout } = await run('curl', ['-s', '-D', '-', '--http2-prior-knowledge', ...args]);
  const split = stdout.indexOf('\r\n\r\n');
  const head = stdout.slice(0, split);
  return { status: Number(/^HTTP\/2 (\d+)/u.exec(head)![1]), headers: head.toLowerCase(), body: stdout.slice(split + 4) };
}

describe('REST transcoded to a grpc-js upstream', () => {
  let shop: ShopServer;
  let sc: TestSidecar;
  before(async () => {
    shop = await startShopServer();
    sc = await startTestSidecar(`http://127.0.0.1:${shop.port}`, ['--proto', SHOP_PROTO_DIR, '--transcode']);
  });
  after(async () => {
    await sc.stop();
    await shop.close();
  });

  it('maps a multi-segment path variable and answers proto3 JSON with lowerCamelCase names', async () => {
    const res = await fetch(`${sc.url}/v1/shelves/s1/items/i%201`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('x-served-by'), 'grpc-js');
    assert.equal(res.headers.get('x-trail'), 'ok');
    assert.equal(shop.last.get('GetItem')!.name, 'shelves/s1/items/i 1');
    assert.deepEqual(await res.json(), {
      name: 'shelves/s1/items/i 1',
      displayName: 'Blue mug',
      priceMicros: '9007199254740993',
      stock: '18446744073709551615',
      shelfRank: -3,
      weight: 0.25,
      onSale: true,
      thumbnail: '+/8AEA==',
      color: 'COLOR_BLUE',
      tags: ['kitchen', 'ceramic'],
      counts: { warehouse: 4, shop: 0 },
      created: '2023-11-14T22:13:20.120Z',
      shelfLife: '3600.500s',
      note: 'fragile',
      big: '-5',
      attributes: { glaze: 'matte', sizes: [1, true, null] },
      mask: 'displayName,size.widthMm',
      SKU: 'MUG-1',
      discount: 0,
      size: { widthMm: 80, heightMm: 95 },
    });
    const [rec] = sc.recorder.ended.slice(-1);
    assert.equal(rec!.protocol, 'rest');
    assert.equal(rec!.httpStatus, 200);
  });

  it('takes an additional binding, and answers an upstream error as google.rpc.Status with its trailers as headers', async () => {
    const res = await fetch(`${sc.url}/v1/items/missing-1`);
    assert.equal(res.status, 404);
    assert.equal(res.headers.get('x-trail'), 'yes');
    assert.deepEqual(await res.json(), { code: 5, message: 'no item missing-1', details: [] });
  });

  it('fills the remaining fields from the query and returns the response_body field', async () => {
    const res = await fetch(`${sc.url}/v1/shelves/s9/items?pageSize=3&colors=COLOR_RED&colors=2&min_size.width_mm=10&minSize.heightMm=20`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), [{ name: 'shelves/s9/items/0' }, { name: 'shelves/s9/items/1' }, { name: 'shelves/s9/items/2' }]);
    assert.deepEqual(shop.last.get('ListItems'), { shelf_id: 's9', page_size: 3, colors: ['COLOR_RED', 'COLOR_BLUE'], min_size: { width_mm: 10, height_mm: 20 } });
  });

  it('reads body "field" and body "*" with JSON and proto names, well-known types and int64 strings', async () => {
    const created = await fetch(`${sc.url}/v1/shelves/s2/items`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ displayName: 'Cup', price_micros: 12, created: '2024-02-29T12:00:00.5+01:00', shelfLife: '-1.25s', note: 'n', attributes: { a: [1, 'x'] }, mask: 'displayName,sizeWidth', SKU: 'C-1', color: 'COLOR_RED' }),
    });
    assert.equal(created.status, 200);
    assert.deepEqual(await created.json(), {
      name: 'shelves/s2/items/new',
      displayName: 'Cup',
      priceMicros: '12',
      color: 'COLOR_RED',
      created: '2024-02-29T11:00:00.500Z',
      shelfLife: '-1.250s',
      note: 'n',
      attributes: { a: [1, 'x'] },
      mask: 'displayName,sizeWidth',
      SKU: 'C-1',
    });
    const updated = await fetch(`${sc.url}/v1/items/i7`, { method: 'PATCH', body: JSON.stringify({ name: 'ignored-by-path', stock: '42', big: 7, onSale: false }) });
    assert.deepEqual(await updated.json(), { name: 'i7', stock: '42', big: '7' });
  });

  it('answers a request that does not fit the message with 400 and the field that is wrong', async () => {
    const unknown = await fetch(`${sc.url}/v1/items/i7`, { method: 'PATCH', body: JSON.stringify({ colour: 'red' }) });
    assert.equal(unknown.status, 400);
    assert.deepEqual(await unknown.json(), { code: 3, message: 'colour: no such field in Item', details: [] });
    const badInt = await fetch(`${sc.url}/v1/shelves/s9/items?pageSize=many`);
    assert.equal(badInt.status, 400);
    assert.match(((await badInt.json()) as { message: string }).message, /pageSize: "many" is not an integer/u);
    const notJson = await fetch(`${sc.url}/v1/items/i7`, { method: 'PATCH', body: '{' });
    assert.equal(notJson.status, 400);
    // Out of range is refused, not wrapped to another number (json-mapping.test.ts has each type).
    const overflow = await fetch(`${sc.url}/v1/items/i7`, { method: 'PATCH', body: JSON.stringify({ stock: '18446744073709551616' }) });
    assert.equal(overflow.status, 400);
    assert.deepEqual(await overflow.json(), { code: 3, message: 'stock: "18446744073709551616" is not within the range of uint64', details: [] });
    const bigEnum = await fetch(`${sc.url}/v1/shelves/s9/items?colors=2147483648`);
    assert.equal(bigEnum.status, 400);
    assert.match(((await bigEnum.json()) as { message: string }).message, /^colors: 2147483648 is not a value of Color$/u);
  });

  it('maps every gRPC code to its HTTP status (google/rpc/code.proto)', async () => {
    const expected: Record<number, number> = { 1: 499, 2: 500, 3: 400, 4: 504, 5: 404, 6: 409, 7: 403, 8: 429, 9: 400, 10: 409, 11: 400, 12: 501, 13: 500, 14: 503, 15: 500, 16: 401 };
    for (const [code, status] of Object.entries(expected)) {
      const res = await fetch(`${sc.url}/v1/fail/${code}:fail`, { method: 'POST', body: JSON.stringify({ message: `code ${code}` }) });
      assert.equal(res.status, status, `code ${code}`);
      assert.equal(res.headers.get('x-why'), 'asked');
      assert.deepEqual(await res.json(), { code: Number(code), message: `code ${code}`, details: [] });
    }
  });

  it('serves an h2c caller (curl) the same way', async () => {
    const r = await curl([`${sc.url}/v1/items/missing-2`]);
    assert.equal(r.status, 404);
    assert.match(r.headers, /content-type: application\/json/u);
    assert.deepEqual(JSON.parse(r.body), { code: 5, message: 'no item missing-2', details: [] });
    const ok = await curl(['-X', 'POST', '-d', '{"displayName":"h2"}', `${sc.url}/v1/shelves/s3/items`]);
    assert.equal(ok.status, 200);
    assert.deepEqual(JSON.parse(ok.body), { name: 'shelves/s3/items/new', displayName: 'h2' });
  });

  it('transcodes a server stream as newline-delimited JSON, and a late error as a last {"error": …} line', async () => {
    const res = await fetch(`${sc.url}/v1/shelves/s4/items:watch?count=3`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    assert.deepEqual((await res.text()).trim().split('\n').map((l) => JSON.parse(l)), [{ name: 'shelves/s4/items/0' }, { name: 'shelves/s4/items/1', shelfRank: 1 }, { name: 'shelves/s4/items/2', shelfRank: 2 }]);
    const failing = await fetch(`${sc.url}/v1/shelves/s4/items:watch?count=3&failAfter=1`);
    assert.deepEqual((await failing.text()).trim().split('\n').map((l) => JSON.parse(l)), [{ name: 'shelves/s4/items/0' }, { error: { code: 10, message: 'stopped on purpose', details: [] } }]);
  });

  it('transcodes a server stream as server-sent events when the caller accepts them', async () => {
    const r = await curl(['-H', 'accept: text/event-stream', `${sc.url}/v1/shelves/s5/items:watch?count=2`]);
    assert.equal(r.status, 200);
    assert.match(r.headers, /content-type: text\/event-stream/u);
    assert.equal(r.body, 'data: {"name":"shelves/s5/items/0"}\n\ndata: {"name":"shelves/s5/items/1","shelfRank":1}\n\n');
  });

  it('leaves a path no rule binds to the REST upstream', async () => {
    const res = await fetch(`${sc.url}/v2/elsewhere`);
    // The REST upstream here is the gRPC server itself, which answers a plain GET with an HTTP error of its own.
    assert.notEqual(res.headers.get('content-type'), 'application/json');
  });
});

describe('REST transcoding with --json-names proto', () => {
  it('keeps the proto field names', async () => {
    const shop = await startShopServer();
    const sc = await startTestSidecar(`http://127.0.0.1:${shop.port}`, ['--proto', SHOP_PROTO_DIR, '--transcode', '--json-names', 'proto']);
    try {
      const res = await fetch(`${sc.url}/v1/items/i1`);
      const body = (await res.json()) as Record<string, unknown>;
      assert.equal(body.display_name, 'Blue mug');
      assert.equal(body.sku_code, 'MUG-1');
      assert.deepEqual(body.size, { width_mm: 80, height_mm: 95 });
    } finally {
      await sc.stop();
      await shop.close();
    }
  });
});
