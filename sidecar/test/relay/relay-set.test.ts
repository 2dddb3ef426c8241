// Which HTTP/2 connections the relay takes under --data-plane relay: only those
// whose upstream speaks HTTP/2. An app that speaks only HTTP/1.1 (learned under
// --upstream-protocol auto, or named by --upstream-protocol http1) gets its calls
// through the terminating path, which translates each one.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { h2Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

describe('RelaySet: the upstream HTTP version decides', () => {
  let h1App: http.Server;
  let h1Url: string;
  let h2App: http2.Http2Server;
  let h2Url: string;
  const sidecars: TestSidecar[] = [];
  before(async () => {
    h1App = http.createServer((req, res) => {
      req.resume();
      res.setHeader('x-app-version', req.httpVersion);
      res.end(`hello over ${req.httpVersion}`);
    });
    await new Promise<void>((r) => h1App.listen(0, '127.0.0.1', r));
    h1Url = `http://127.0.0.1:${(h1App.address() as AddressInfo).port}`;
    h2App = http2.createServer((req, res) => {
      req.resume();
      res.end(`hello over ${req.httpVersion}`);
    });
    await new Promise<void>((r) => h2App.listen(0, '127.0.0.1', r));
    h2Url = `http://127.0.0.1:${(h2App.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const s of sidecars) await s.stop();
    h1App.closeAllConnections();
    await new Promise((r) => h1App.close(r));
    await new Promise((r) => h2App.close(r));
  });

  const start = async (url: string, ...args: string[]): Promise<TestSidecar> => {
    const s = await startTestSidecar(url, ['--data-plane', 'relay', ...args]);
    sidecars.push(s);
    return s;
  };
  const upstreamVersions = (s: TestSidecar): string[] => s.recorder.opened.filter((c) => c.side === 'upstream').map((c) => c.httpVersion);

  for (const mode of ['auto', 'http1'] as const) {
    it(`carries h2c calls to an HTTP/1.1-only app as HTTP/1.1 (--upstream-protocol ${mode})`, async () => {
      const s = await start(h1Url, '--upstream-protocol', mode);
      for (const path of ['/a', '/b']) {
        const r = await h2Request(s.url, path);
        assert.equal(r.status, 200);
        assert.equal(r.text, 'hello over 1.1');
      }
      const ended = await s.recorder.waitForEnded(2);
      assert.deepEqual(ended.map((c) => c.httpStatus), [200, 200]);
      assert.deepEqual([...new Set(upstreamVersions(s))], ['1.1']);
    });
  }

  it('sends an idle relayed connection GOAWAY at --idle-timeout, as the terminating path does', async () => {
    const s = await start(h2Url, '--idle-timeout', '300ms');
    const session = http2.connect(s.url);
    session.on('error', () => {});
    const goaway = new Promise<number>((resolve) => session.once('goaway', (code: number) => resolve(code)));
    const r = await h2Request(s.url, '/a');
    assert.equal(r.status, 200);
    await new Promise<void>((resolve, reject) => {
      const req = session.request({ ':path': '/b' });
      req.on('error', reject);
      req.resume();
      req.on('close', () => resolve());
    });
    assert.equal(await goaway, http2.constants.NGHTTP2_NO_ERROR);
    assert.ok(s.recorder.goaways.some((g) => g.side === 'proxy'));
    session.close();
  });

  it('relays h2c calls to an app that speaks HTTP/2, once learned (--upstream-protocol auto)', async () => {
    const s = await start(h2Url);
    const r = await h2Request(s.url, '/a');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'hello over 2.0');
    await s.recorder.waitForEnded(1);
    // The relay's own upstream connection: one per client connection, HTTP/2.
    assert.deepEqual(upstreamVersions(s), ['2']);
  });
});
