// The relay when the upstream refuses calls unprocessed: a call refused with
// REFUSED_STREAM (or above a GOAWAY's last stream id) is sent once more on a
// session of the relay's own, request headers and held body replayed, and its
// answer comes back on the client's stream, alongside the relayed upstream's own
// answers on the same connection. An upstream's graceful restart (GOAWAY, then
// close) leaves the client's connection serving.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { noopTracing } from '../../src/call/call-tracing.ts';
import type { MetricFamily } from '../../src/observe/metric-cells.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';
import { createRecorder, type Recorder } from '../support/sidecar.ts';

const { NGHTTP2_REFUSED_STREAM, NGHTTP2_NO_ERROR } = http2.constants;

interface Answer {
  status: number | undefined;
  body: Buffer;
  rstCode: number | undefined;
}

function call(session: http2.ClientHttp2Session, path: string, body?: Buffer, pauseMs = 0): Promise<Answer> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': body ? 'POST' : 'GET', ':path': path }, { endStream: body === undefined });
    if (body) req.end(body);
    let status: number | undefined;
    const chunks: Buffer[] = [];
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => {});
    req.on('close', () => resolve({ status, body: Buffer.concat(chunks), rstCode: req.rstCode }));
    if (pauseMs > 0) {
      // Read nothing for a while: the connection window fills up to what the sender believes it is.
      req.pause();
      setTimeout(() => req.resume(), pauseMs);
    }
  });
}

/** A relaying sidecar whose extra metric families (the retries among them) can be read. */
interface RetrySidecar {
  sidecar: Sidecar;
  recorder: Recorder;
  url: string;
  metrics: () => string;
}

async function startRetrySidecar(upstreamUrl: string): Promise<RetrySidecar> {
  const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstreamUrl, '--log-level', 'silent', '--drain-timeout', '2s', '--data-plane', 'relay', '--upstream-protocol', 'http2'], {});
  if (result.kind !== 'run') throw new Error('unexpected help');
  const recorder = createRecorder();
  const families: MetricFamily[] = [];
  const sidecar = await startSidecar(result.config, createLogger('silent'), () => ({ observers: [recorder], tracing: noopTracing, adminHandlers: new Map(), addMetrics: (added) => families.push(...added), shutdown: async () => {} }));
  return { sidecar, recorder, url: `http://127.0.0.1:${sidecar.proxyAddress.port}`, metrics: () => families.map((f) => f.render(false)).join('') };
}

function retries(sc: RetrySidecar): Record<string, number> {
  const text = sc.metrics();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^rpcscope_upstream_retries_total\{reason="(\w+)"\} (\d+)/gmu)) out[m[1]!] = Number(m[2]);
  return out;
}

describe('relay: calls the upstream refused unprocessed', () => {
  let upstream: http2.Http2Server;
  let sc: RetrySidecar;
  /** Attempts per path, and the request bytes each attempt brought. */
  const attempts = new Map<string, number[]>();
  let goawayNext = false;
  before(async () => {
    // /refuse-once/<n>: the first attempt is refused (after its body), the second answered with n bytes.
    // /bytes/<n>: answered with n bytes. /goaway: the session sends GOAWAY naming no stream, then closes.
    upstream = http2.createServer({ settings: { initialWindowSize: 1024 * 1024 } });
    upstream.on('stream', (stream, headers) => {
      const path = String(headers[':path']);
      stream.on('error', () => {});
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const seen = attempts.get(path) ?? [];
        seen.push(Buffer.concat(chunks).length);
        attempts.set(path, seen);
        const n = Number.parseInt(path.split('/')[2] ?? '0', 10) || 0;
        if (path.startsWith('/refuse-once/') && seen.length === 1) return void stream.close(NGHTTP2_REFUSED_STREAM);
        if (goawayNext) {
          goawayNext = false;
          // As an app going away does: it names no stream as taken, drops this one unanswered, and closes.
          stream.session!.goaway(NGHTTP2_NO_ERROR, 0);
          stream.close(NGHTTP2_REFUSED_STREAM);
          setTimeout(() => stream.session?.close(), 20);
          return;
        }
        stream.respond({ ':status': 200, 'x-attempt': String(seen.length) });
        stream.end(Buffer.alloc(n, 7));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    sc = await startRetrySidecar(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  });
  after(async () => {
    await sc.sidecar.drain();
    upstream.close();
  });

  it('replays a refused call once, headers and held body, and counts it refused_stream', async () => {
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    const body = Buffer.alloc(10_000, 3);
    const before = retries(sc).refused_stream ?? 0;
    const answer = await call(session, '/refuse-once/100', body);
    assert.deepEqual([answer.status, answer.body.length, answer.rstCode], [200, 100, NGHTTP2_NO_ERROR]);
    assert.deepEqual(attempts.get('/refuse-once/100'), [body.length, body.length]);
    assert.equal(retries(sc).refused_stream, before + 1);
    const rec = sc.recorder.ended.findLast((r) => r.path === '/refuse-once/100')!;
    assert.deepEqual([rec.httpStatus, rec.reset, rec.responseBytes], [200, undefined, 100]);
    session.close();
  });

  it('relays 50 KB retried answers and then a 65 KB answer the client is slow to read, on one connection without a flow-control error', async () => {
    const session = http2.connect(sc.url, { settings: { initialWindowSize: 4 * 1024 * 1024 } });
    let sessionError: Error | undefined;
    session.on('error', (err) => (sessionError = err));
    for (let round = 0; round < 3; round++) {
      const retried = await call(session, `/refuse-once/50000?round=${round}`);
      assert.deepEqual([retried.status, retried.body.length], [200, 50_000]);
      const slow = await call(session, `/bytes/65000?round=${round}`, undefined, 100);
      assert.deepEqual([slow.status, slow.body.length, slow.rstCode], [200, 65_000, NGHTTP2_NO_ERROR], `round ${round}`);
    }
    assert.equal(sessionError, undefined);
    assert.equal(session.destroyed, false);
    session.close();
  });

  it('keeps the client connection serving through an upstream GOAWAY and close: the call it named unprocessed is replayed, and the next ones go on', async () => {
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    let goaway = false;
    session.on('goaway', () => (goaway = true));
    assert.equal((await call(session, '/bytes/10')).status, 200);
    const total = (): number => (retries(sc).goaway ?? 0) + (retries(sc).refused_stream ?? 0);
    const before = total();
    goawayNext = true;
    const named = await call(session, '/bytes/20?named', Buffer.from('x'));
    assert.deepEqual([named.status, named.body.length], [200, 20]);
    assert.deepEqual(attempts.get('/bytes/20?named'), [1, 1]);
    // Counted by whichever of the GOAWAY and the reset the relay read first.
    assert.equal(total(), before + 1);
    await new Promise((r) => setTimeout(r, 50));
    for (let n = 0; n < 3; n++) assert.deepEqual(await call(session, `/bytes/30?after=${n}`).then((a) => [a.status, a.body.length]), [200, 30]);
    assert.equal(goaway, false, 'the upstream GOAWAY stays with the relay');
    assert.equal(session.destroyed, false);
    session.close();
  });
});
