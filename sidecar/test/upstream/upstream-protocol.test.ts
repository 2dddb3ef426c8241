// The HTTP version toward the upstream, per endpoint: learned with `auto`, fixed
// with http1/http2; HTTP/1.1 chunked trailers reach HTTP/2 callers as trailers,
// HTTP/2 trailers reach HTTP/1.1 callers as a chunked trailer section; one
// record per call either way.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { h1Request, h2Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

async function listen(server: http.Server | http2.Http2Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('HTTP/2 callers of an HTTP/1.1-only app', () => {
  let app: http.Server;
  let sc: TestSidecar;
  before(async () => {
    app = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum', 'x-seen-version': req.httpVersion });
      res.write('a');
      res.addTrailers({ 'x-checksum': 'abc123' });
      res.end('b');
    });
    sc = await startTestSidecar(await listen(app));
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('get the chunked trailer section as HTTP/2 trailers, and one record per call', async () => {
    const before = sc.recorder.ended.length;
    const res = await h2Request(sc.url, '/x');
    assert.deepEqual([res.status, res.text, res.headers['x-seen-version'], res.trailers['x-checksum']], [200, 'ab', '1.1', 'abc123']);
    // Connection-specific fields stay on their own hop.
    assert.equal(res.headers['transfer-encoding'], undefined);
    assert.equal(res.headers.trailer, undefined);
    const recs = await sc.recorder.waitForEnded(before + 1);
    assert.equal(recs.length, before + 1);
    assert.deepEqual([recs.at(-1)!.httpVersion, recs.at(-1)!.httpStatus, recs.at(-1)!.reset], ['2', 200, undefined]);
    assert.ok(sc.recorder.opened.some((c) => c.side === 'upstream' && c.httpVersion === '1.1'));
    assert.ok(!sc.recorder.opened.some((c) => c.side === 'upstream' && c.httpVersion === '2'));
  });
});

describe('HTTP/1.1 callers of an HTTP/2-only app', () => {
  let app: http2.Http2Server;
  let sc: TestSidecar;
  before(async () => {
    app = http2.createServer();
    app.on('stream', (stream, headers) => {
      stream.respond({ ':status': 200, 'content-type': 'text/plain', 'x-authority': String(headers[':authority']) }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'x-checksum': 'def456' }));
      stream.end('hello');
    });
    sc = await startTestSidecar(await listen(app));
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('get its trailers as a chunked trailer section, with Host as :authority', async () => {
    // The first HTTP/1.1 call finds out that the app speaks only HTTP/2: UNAVAILABLE, safe to retry.
    const first = await h1Request(`${sc.url}/y`);
    assert.equal(first.status, 503);
    await sc.recorder.waitForEnded(1);
    const since = sc.recorder.started.length;
    const res = await h1Request(`${sc.url}/y`, { headers: { host: 'orders.local' } });
    assert.deepEqual([res.status, res.text, res.headers['x-authority'], res.trailers['x-checksum']], [200, 'hello', 'orders.local', 'def456']);
    const rec = await sc.recorder.waitForCall((c) => c.path === '/y', { since });
    assert.deepEqual([rec.httpVersion, rec.httpStatus, rec.reset], ['1.1', 200, undefined]);
    assert.ok(sc.recorder.opened.some((c) => c.side === 'upstream' && c.httpVersion === '2'));
  });
});

describe('--upstream-protocol fixes the version', () => {
  let app: http.Server;
  before(async () => {
    app = http.createServer((_req, res) => res.end('ok'));
  });
  after(() => app.close());

  it('http1: HTTP/2 callers go as HTTP/1.1 without a probe', async () => {
    const url = await listen(app);
    const sc = await startTestSidecar(url, ['--upstream-protocol', 'http1']);
    try {
      const res = await h2Request(sc.url, '/');
      assert.deepEqual([res.status, res.text], [200, 'ok']);
    } finally {
      await sc.stop();
    }
  });

  it('http2: an HTTP/1.1-only app is spoken to in HTTP/2 and the caller is told it failed', async () => {
    const sc = await startTestSidecar(`http://127.0.0.1:${(app.address() as AddressInfo).port}`, ['--upstream-protocol', 'http2']);
    try {
      const res = await h1Request(`${sc.url}/`);
      assert.ok(res.status >= 500, `status ${res.status}`);
      const rec = await sc.recorder.waitForCall((c) => c.path === '/');
      assert.equal(rec.httpStatus, res.status);
    } finally {
      await sc.stop();
    }
  });

  it('rejects a value it does not know, naming the flag', async () => {
    await assert.rejects(startTestSidecar('http://127.0.0.1:1', ['--upstream-protocol', 'h2']), /--upstream-protocol: invalid value "h2": expected one of auto, http1, http2/);
  });
});
