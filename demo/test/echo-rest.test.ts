// The echo server's REST routes, SSE and WebSocket, over fetch (HTTP/1.1),
// node:http and node:http2 (h2c) clients.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { WebSocket } from 'ws';
import { deterministicBytes, startConnectEcho } from '../src/index.ts';
import type { Upstream } from '../src/index.ts';

type H2Response = { status: number; headers: http2.IncomingHttpHeaders; body: Buffer };

function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    const chunks: Buffer[] = [];
    let responseHeaders: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (responseHeaders = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status: Number(responseHeaders[':status']), headers: responseHeaders, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
    if (body !== undefined) stream.end(body);
  });
}

describe('echo REST routes', () => {
  let upstream: Upstream;
  let session: http2.ClientHttp2Session;
  before(async () => {
    upstream = await startConnectEcho();
    session = http2.connect(upstream.url);
    session.on('error', () => {});
  });
  after(async () => {
    session.close();
    await upstream.close();
  });

  test('GET /v1/echo/{id} returns the id and the query as JSON', async () => {
    const res = await fetch(`${upstream.url}/v1/echo/order%2042?color=blue&n=3`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(await res.json(), { id: 'order 42', query: { color: 'blue', n: '3' } });
  });

  test('the same route answers over h2c', async () => {
    const res = await h2Request(session, { ':method': 'GET', ':path': '/v1/echo/7' });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.body.toString()), { id: '7', query: {} });
  });

  test('POST /v1/echo streams each chunk back before the request ends (HTTP/1.1)', async () => {
    const req = http.request(`${upstream.url}/v1/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' } });
    const response = new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    req.write('first;');
    const res = await response;
    assert.equal(res.headers['content-type'], 'text/plain');
    const first = await new Promise<Buffer>((resolve) => res.once('data', resolve));
    // The request is still open here: a buffering server could not have answered yet.
    assert.equal(first.toString(), 'first;');
    const rest: Buffer[] = [];
    res.on('data', (c: Buffer) => rest.push(c));
    const ended = new Promise((resolve) => res.on('end', resolve));
    req.end('second');
    await ended;
    assert.equal(Buffer.concat(rest).toString(), 'second');
  });

  test('POST /v1/echo returns a large body unchanged over h2c', async () => {
    const body = deterministicBytes(1_000_000, 13);
    const res = await h2Request(session, { ':method': 'POST', ':path': '/v1/echo' }, body);
    assert.equal(res.status, 200);
    assert.ok(res.body.equals(body));
  });

  test('POST /v1/digest answers the byte count and sha256 of the body', async () => {
    const body = deterministicBytes(250_000);
    const res = await fetch(`${upstream.url}/v1/digest`, { method: 'POST', body });
    assert.deepEqual(await res.json(), { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') });
  });

  test('GET /v1/status/{code} answers that status', async () => {
    for (const status of [200, 404, 429, 503]) {
      const res = await fetch(`${upstream.url}/v1/status/${status}`);
      assert.equal(res.status, status);
      assert.deepEqual(await res.json(), { status });
    }
    const empty = await h2Request(session, { ':method': 'GET', ':path': '/v1/status/204' });
    assert.equal(empty.status, 204);
    assert.equal(empty.body.length, 0);
  });

  test('GET /v1/slow?ms=N waits N ms', async () => {
    const started = performance.now();
    const res = await fetch(`${upstream.url}/v1/slow?ms=150`);
    assert.deepEqual(await res.json(), { slept_ms: 150 });
    assert.ok(performance.now() - started >= 145);
  });

  test('GET /v1/bytes?n=N streams N deterministic bytes', async () => {
    const res = await h2Request(session, { ':method': 'GET', ':path': '/v1/bytes?n=100001' });
    assert.equal(res.headers['content-length'], '100001');
    assert.ok(res.body.equals(deterministicBytes(100_001)));
  });

  test('a client reset mid-body leaves the server serving', async () => {
    const stream = session.request({ ':method': 'GET', ':path': '/v1/bytes?n=50000000' });
    stream.on('error', () => {});
    await new Promise((resolve) => stream.once('data', resolve));
    stream.close(http2.constants.NGHTTP2_CANCEL);
    const res = await h2Request(session, { ':method': 'GET', ':path': '/v1/bytes?n=10' });
    assert.equal(res.body.length, 10);
  });

  test('an HTTP/1.1 client leaving mid-stream leaves the server serving', async () => {
    const req = http.get(`${upstream.url}/v1/events?n=1000&interval_ms=5`);
    req.on('error', () => {});
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    await new Promise((resolve) => res.once('data', resolve));
    req.destroy();
    const after = await fetch(`${upstream.url}/v1/echo/alive`);
    assert.equal(after.status, 200);
    await after.body?.cancel();
  });

  test('GET /v1/events sends N server-sent events', async () => {
    const res = await fetch(`${upstream.url}/v1/events?n=4&interval_ms=10`);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    const events = (await res.text()).trim().split('\n\n');
    assert.equal(events.length, 4);
    assert.equal(events[3], 'id: 3\nevent: tick\ndata: {"index":3,"n":4}');
  });

  test('/v1/ws echoes WebSocket text and binary messages', async () => {
    const ws = new WebSocket(`${upstream.url.replace('http', 'ws')}/v1/ws`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const replies: Array<[string, boolean]> = [];
    const twoReplies = new Promise<void>((resolve) =>
      ws.on('message', (data, isBinary) => {
        replies.push([Buffer.from(data as Buffer).toString('hex'), isBinary]);
        if (replies.length === 2) resolve();
      }),
    );
    ws.send('hello');
    ws.send(Buffer.from([1, 2, 3]));
    await twoReplies;
    assert.deepEqual(replies, [[Buffer.from('hello').toString('hex'), false], ['010203', true]]);
    ws.close();
  });

  test('an unknown /v1 route is a 404', async () => {
    const res = await fetch(`${upstream.url}/v1/nothing`);
    assert.equal(res.status, 404);
    await res.body?.cancel();
  });
});
