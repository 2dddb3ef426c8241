// --max-connection-age: a client connection is told to go (GOAWAY) after its
// age, and the calls it carries then still finish.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { startConnectEcho, type Upstream } from '@rpcscope/demo';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

describe('--max-connection-age', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url, ['--max-connection-age', '400ms', '--max-connection-age-grace', '5s']);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  it('sends GOAWAY after the age (±10 %) and lets the call in flight finish', async () => {
    const session = http2.connect(sc.url);
    const opened = Date.now();
    const goaway = new Promise<number>((resolve) => session.once('goaway', () => resolve(Date.now() - opened)));
    const slow = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = session.request({ ':path': '/v1/slow?ms=900' });
      let status = 0;
      let body = '';
      req.on('response', (h) => (status = Number(h[':status'])));
      req.on('data', (d) => (body += d));
      req.on('end', () => resolve({ status, body }));
      req.on('error', reject);
    });
    const after = await goaway;
    assert.ok(after >= 350 && after < 800, `GOAWAY after ${after} ms`);
    assert.deepEqual(await slow, { status: 200, body: '{"slept_ms":900}' });
    assert.ok(sc.recorder.goaways.some((g) => g.side === 'proxy'));
  });

  it('asks an HTTP/1.1 client past the age to close its connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<string | undefined>((resolve, reject) => {
        http.get(`${sc.url}/v1/echo/1`, { agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.headers.connection));
        }).on('error', reject);
      });
    assert.equal(await get(), 'keep-alive');
    await new Promise((r) => setTimeout(r, 100));
    const first = sc.recorder.opened.filter((c) => c.side === 'downstream').length;
    // Busy past the age: the response that ends it says close.
    const slow = new Promise<string | undefined>((resolve, reject) => {
      http.get(`${sc.url}/v1/slow?ms=500`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.headers.connection));
      }).on('error', reject);
    });
    assert.equal(await slow, 'close');
    assert.equal(await get(), 'keep-alive');
    assert.equal(sc.recorder.opened.filter((c) => c.side === 'downstream').length, first + 1, 'a new connection after the close');
    agent.destroy();
  });
});
