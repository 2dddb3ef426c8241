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

    describe(`over HTTP/${version}`, () => {
      it('uploads a large body intact (checksummed by the upstream)', async () => {
        const res = await request('/v1/digest', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
        assert.equal(res.status, 200);
        assert.deepEqual(JSON.parse(res.text), { bytes: BIG, sha256: sha256(body) });
        const rec = (await sc.recorder.waitForEnded(sc.recorder.started.length)).at(-1)!;
        assert.deepEqual([rec.protocol, rec.httpVersion, rec.requestBytes], ['rest', version, BIG]);
      });

      it('downloads a large body intact', async () => {
        const res = await request(`/v1/bytes?n=${BIG}`);
        assert.equal(res.status, 200);
        assert.equal(res.bytes, BIG);
        assert.equal(res.sha256, sha256(deterministicBytes(BIG)));
      });

      it('streams a body through in both directions at once', async () => {
        const res = await request('/v1/echo', { method: 'POST', body, headers: { 'content-type': 'application/octet-stream' } });
        assert.equal(res.bytes, BIG);
        assert.equal(res.sha256, sha256(body));
        const rec = (await sc.recorder.waitForEnded(sc.recorder.started.length)).at(-1)!;
        assert.deepEqual([rec.requestBytes, rec.responseBytes, rec.httpStatus], [BIG, BIG, 200]);
      });

      it('passes error statuses through and records them', async () => {
        for (const status of [404, 429, 503]) {
          const res = await request(`/v1/status/${status}`);
          assert.equal(res.status, status);
          const rec = (await sc.recorder.waitForEnded(sc.recorder.started.length)).at(-1)!;
          assert.equal(rec.httpStatus, status);
        }
      });

      it('delivers server-sent events as they happen, not at the end', async () => {
        const started = Date.now();
        const firstEventAt = await new Promise<number>((resolve, reject) => {
          if (version === '1.1') {
            http.get(`${sc.url}/v1/events?n=4&interval_ms=300`, (res) => {
              assert.match(String(res.headers['content-type']), /text\/event-stream/);
              res.once('data', () => resolve(Date.now() - started));
              res.resume();
            }).on('error', reject);
          } else {
            const session = http2.connect(sc.url);
            const req = session.request({ ':path': '/v1/events?n=4&interval_ms=300' });
            req.once('data', () => {
              resolve(Date.now() - started);
              req.on('end', () => session.close()).resume();
            });
            req.on('error', reject);
          }
        });
        // The whole stream takes over 900 ms; its first event must not wait for that.
        assert.ok(firstEventAt < 600, `first event after ${firstEventAt} ms`);
      });

      it('applies backpressure: a paused reader stops the upstream instead of filling memory', async () => {
        const total = 64 * 1024 * 1024;
        const before = sc.recorder.started.length;
        const done = new Promise<void>((resolve, reject) => {
          const check = (pause: () => void, resume: () => void): void => {
            pause();
            setTimeout(() => {
              const live = sc.recorder.started[before]!;
              try {
                assert.ok(live.responseBytes < total / 2, `sidecar took ${live.responseBytes} of ${total} bytes from the upstream while the client read nothing`);
              } catch (err) {
                reject(err);
              }
              resume();
            }, 700);
          };
          if (version === '1.1') {
            http.get(`${sc.url}/v1/bytes?n=${total}`, (res) => {
              res.once('data', () => check(() => res.pause(), () => res.resume()));
              res.on('end', resolve);
            }).on('error', reject);
          } else {
            const session = http2.connect(sc.url);
            const req = session.request({ ':path': `/v1/bytes?n=${total}` });
            req.once('data', () => check(() => req.pause(), () => req.resume()));
            req.on('end', () => {
              session.close();
              resolve();
            });
            req.on('error', reject);
          }
        });
        await done;
        const rec = (await sc.recorder.waitForEnded(before + 1)).at(-1)!;
        assert.equal(rec.responseBytes, total);
      });
    });
  }

  it('upgrades to a WebSocket and relays messages both ways', async () => {
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
    const rec = (await sc.recorder.waitForEnded(sc.recorder.started.length)).at(-1)!;
    assert.equal(rec.httpStatus, 101);
    assert.equal(rec.reset, undefined);
  });
});

describe('an upstream that cannot be reached', () => {
  let sc: TestSidecar;
  before(async () => {
    // Port 1 on loopback: nothing listens there, connections are refused at once.
    sc = await startTestSidecar('http://127.0.0.1:1');
  });
  after(() => sc.stop());

  it('gives REST callers 503 at once, over HTTP/1.1 and HTTP/2', async () => {
    const started = Date.now();
    assert.equal((await h1Request(`${sc.url}/v1/orders`)).status, 503);
    assert.equal((await h2Request(sc.url, '/v1/orders')).status, 503);
    assert.ok(Date.now() - started < 1000);
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
