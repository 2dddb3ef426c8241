// REST through the sidecar over HTTP/1.1 and h2c: large bodies arrive intact
// both ways, streaming responses stream, statuses pass, WebSockets connect, and
// nothing is buffered whole.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { deterministicBytes, startConnectEcho, type Upstream } from '@rpcscope/demo';
import { settled } from '../../../test/support/eventually.ts';
import { h1Request, h2Request, sha256 } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const BIG = 8 * 1024 * 1024;

describe('REST through the sidecar', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  const body = randomBytes(BIG);
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  for (const version of ['1.1', '2'] as const) {
    const request = (path: string, opts: Parameters<typeof h1Request>[1] = {}) => (version === '1.1' ? h1Request(sc.url + path, opts) : h2Request(sc.url, path, opts));
    // Each test reads the record of its own call: the one on its path among the
    // calls started after it began, never the last to end (a call an earlier
    // test left open can end after this test's).
    const callOn = (path: string, since: number) => sc.recorder.waitForCall((c) => c.path === path, { since });

    describe(`over HTTP/${version}`, () => {
      it('uploads a large body intact (checksummed by the upstream)', async () => {
        const since = sc.recorder.started.length;
        const res = await request('/v1/digest', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
        assert.equal(res.status, 200);
        assert.deepEqual(JSON.parse(res.text), { bytes: BIG, sha256: sha256(body) });
        const rec = await callOn('/v1/digest', since);
        assert.deepEqual([rec.protocol, rec.httpVersion, rec.requestBytes], ['rest', version, BIG]);
      });

      it('downloads a large body intact', async () => {
        const res = await request(`/v1/bytes?n=${BIG}`);
        assert.equal(res.status, 200);
        assert.equal(res.bytes, BIG);
        assert.equal(res.sha256, sha256(deterministicBytes(BIG)));
      });

      it('streams a body through in both directions at once', async () => {
        const since = sc.recorder.started.length;
        const res = await request('/v1/echo', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
        assert.equal(res.bytes, BIG);
        assert.equal(res.sha256, sha256(body));
        const rec = await callOn('/v1/echo', since);
        assert.deepEqual([rec.requestBytes, rec.responseBytes, rec.httpStatus], [BIG, BIG, 200]);
      });

      it('passes error statuses through and records them', async () => {
        for (const status of [404, 429, 503]) {
          const since = sc.recorder.started.length;
          const res = await request(`/v1/status/${status}`);
          assert.equal(res.status, status);
          const rec = await callOn(`/v1/status/${status}`, since);
          assert.equal(rec.httpStatus, status);
        }
      });

      it('delivers server-sent events as they happen, not at the end', async () => {
        const since = sc.recorder.started.length;
        // The upstream sends its first event at once and its second a minute later:
        // a sidecar that held the stream until its end would hand the client both
        // events together (or nothing for a minute), whatever the machine's speed.
        const path = '/v1/events?n=2&interval_ms=60000';
        const first = await new Promise<string>((resolve, reject) => {
          if (version === '1.1') {
            const req = http.get(`${sc.url}${path}`, (res) => {
              assert.match(String(res.headers['content-type']), /text\/event-stream/);
              res.once('data', (d: Buffer) => {
                resolve(d.toString());
                req.destroy();
              });
            });
            req.on('error', reject);
          } else {
            const session = http2.connect(sc.url);
            session.on('error', () => {});
            const req = session.request({ ':path': path });
            req.once('data', (d: Buffer) => {
              resolve(d.toString());
              req.close(http2.constants.NGHTTP2_CANCEL);
              session.close();
            });
            req.on('error', reject);
          }
        });
        assert.match(first, /^id: 0\nevent: tick\ndata: \{"index":0,"n":2\}\n\n$/);
        // The client went away before the second event: its call ends now, not in a minute, and not in the next test.
        const rec = await callOn('/v1/events', since);
        assert.equal(rec.httpStatus, 200);
        assert.equal(rec.reset?.side, 'client');
      });

      it('applies backpressure: a paused reader stops the upstream instead of filling memory', async () => {
        const total = 64 * 1024 * 1024;
        const since = sc.recorder.started.length;
        // The client takes the first chunk, then reads nothing until told to.
        const reader = await new Promise<{ resume(): void; ended: Promise<void> }>((resolve, reject) => {
          if (version === '1.1') {
            http.get(`${sc.url}/v1/bytes?n=${total}`, (res) => {
              const ended = new Promise<void>((done, fail) => res.on('end', done).on('error', fail));
              res.once('data', () => {
                res.pause();
                resolve({ resume: () => res.resume(), ended });
              });
            }).on('error', reject);
          } else {
            const session = http2.connect(sc.url);
            const req = session.request({ ':path': `/v1/bytes?n=${total}` });
            const ended = new Promise<void>((done, fail) => {
              req.on('end', () => {
                session.close();
                done();
              });
              req.on('error', fail);
            });
            req.once('data', () => {
              req.pause();
              resolve({ resume: () => req.resume(), ended });
            });
            req.on('error', reject);
          }
        });
        const live = sc.recorder.started.slice(since).find((c) => c.path === '/v1/bytes');
        assert.ok(live, 'the call has started');
        // Where the flow from the upstream stops: the buffers on the way, never the whole body.
        // Waiting for it to stop, rather than a fixed time, makes a machine too busy to move
        // 64 MiB in that time unable to hide a sidecar that reads on regardless.
        const held = await settled(() => live.responseBytes, 1000);
        assert.ok(held > 0 && held < total / 2, `sidecar took ${held} of ${total} bytes from the upstream while the client read nothing`);
        reader.resume();
        await reader.ended;
        const rec = await sc.recorder.waitForCall((c) => c === live);
        assert.equal(rec.responseBytes, total);
      });
    });
  }

  it('upgrades to a WebSocket and relays messages both ways', async () => {
    const since = sc.recorder.started.length;
    const ws = new WebSocket(`${sc.url.replace('http', 'ws')}/v1/ws`);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const replies: string[] = [];
    for (const m of ['ping', 'pong', 'x'.repeat(100_000)]) {
      const reply = new Promise<string>((resolve) => ws.once('message', (d) => resolve(String(d))));
      ws.send(m);
      replies.push(await reply);
    }
    assert.deepEqual(replies.map((r) => r.length), [4, 4, 100_000]);
    ws.close();
    const rec = await sc.recorder.waitForCall((c) => c.path === '/v1/ws', { since });
    assert.equal(rec.httpStatus, 101);
    assert.equal(rec.reset, undefined);
  });
});

describe('an upstream that cannot be reached', () => {
  let sc: TestSidecar;
  before(async () => {
    // Port 1 on loopback: nothing listens there, connections are refused at once.
    // A connect timeout far above the bound below: a sidecar that waited for it
    // fails, a busy machine answering two local calls slowly does not.
    sc = await startTestSidecar('http://127.0.0.1:1', ['--connect-timeout', '30s']);
  });
  after(() => sc.stop());

  it('gives REST callers 503 at once, over HTTP/1.1 and HTTP/2', async () => {
    const started = Date.now();
    assert.equal((await h1Request(`${sc.url}/v1/orders`)).status, 503);
    assert.equal((await h2Request(sc.url, '/v1/orders')).status, 503);
    assert.ok(Date.now() - started < 10_000, `answered after ${Date.now() - started} ms`);
    const recs = await sc.recorder.waitForEnded(2);
    assert.ok(recs.every((r) => r.upstreamUnreachable));
  });

  it('gives gRPC callers UNAVAILABLE in a trailers-only response', async () => {
    const res = await h2Request(sc.url, '/echo.v1.EchoService/Echo', { method: 'POST', headers: { 'content-type': 'application/grpc', te: 'trailers' }, body: Buffer.from([0, 0, 0, 0, 0]) });
    assert.equal(res.status, 200);
    assert.equal(res.headers['grpc-status'], '14');
    assert.equal(res.bytes, 0);
  });

  it('stays up and healthy', async () => {
    const res = await fetch(`${sc.adminUrl}/healthz`);
    assert.equal(res.status, 200);
    assert.equal((await fetch(`${sc.adminUrl}/readyz`)).status, 200);
  });
});
