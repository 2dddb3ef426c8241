// Resets and GOAWAY through the sidecar, against a raw node:http2 upstream that
// resets on request and reports the resets it receives.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const { NGHTTP2_CANCEL, NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_REFUSED_STREAM, NGHTTP2_INTERNAL_ERROR } = http2.constants;

interface RawUpstream {
  url: string;
  /** rstCode of each stream the upstream saw closed, by path. */
  closed: Map<string, { code: number | undefined; at: number }>;
  close(): Promise<void>;
}

// Behaviour by path: /hold keeps the stream open, /reset-after-headers/N sends
// headers then RST_STREAM(N), /refuse refuses before headers, /goaway answers and
// then sends GOAWAY on its session.
async function startRawUpstream(): Promise<RawUpstream> {
  const closed = new Map<string, { code: number | undefined; at: number }>();
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    stream.on('error', () => {});
    stream.on('close', () => closed.set(path, { code: stream.rstCode, at: Date.now() }));
    const m = /^\/reset-after-headers\/(\d+)$/.exec(path);
    if (path.startsWith('/hold')) {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(Buffer.from([0, 0, 0, 0, 1, 0x41]));
    } else if (m) {
      stream.respond({ ':status': 200, 'content-type': 'text/plain' });
      stream.write('partial');
      setTimeout(() => stream.close(Number(m[1])), 20);
    } else if (path === '/refuse') {
      stream.close(NGHTTP2_REFUSED_STREAM);
    } else if (path === '/goaway') {
      stream.respond({ ':status': 200 });
      stream.end('bye');
      const session = stream.session!;
      stream.on('close', () => session.goaway(http2.constants.NGHTTP2_NO_ERROR));
    } else {
      stream.respond({ ':status': 200 });
      stream.end('ok');
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    closed,
    close: () => {
      for (const s of sessions) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

function open(url: string, path: string): { session: http2.ClientHttp2Session; req: http2.ClientHttp2Stream; closed: Promise<number | undefined> } {
  const session = http2.connect(url);
  session.on('error', () => {});
  const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' }, { endStream: false });
  req.on('error', () => {});
  req.resume();
  const closed = new Promise<number | undefined>((resolve) => req.on('close', () => resolve(req.rstCode)));
  return { session, req, closed };
}

async function waitFor<T>(fn: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('resets and GOAWAY through the sidecar', () => {
  let upstream: RawUpstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startRawUpstream();
    sc = await startTestSidecar(upstream.url);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  for (const [name, code] of [['CANCEL', NGHTTP2_CANCEL], ['INTERNAL_ERROR', NGHTTP2_INTERNAL_ERROR], ['ENHANCE_YOUR_CALM', NGHTTP2_ENHANCE_YOUR_CALM]] as const) {
    it(`carries a client's RST_STREAM(${name}) to the upstream within a second`, async () => {
      const path = `/hold/${name}`;
      const { session, req } = open(sc.url, path);
      await new Promise((r) => req.once('response', r));
      const sentAt = Date.now();
      req.close(code);
      const seen = await waitFor(() => upstream.closed.get(path), 1000);
      assert.equal(seen.code, code);
      assert.ok(seen.at - sentAt < 1000);
      const rec = await sc.recorder.waitForCall((c) => c.path === path);
      assert.deepEqual(rec.reset, { side: 'client', code });
      session.close();
    });
  }

  it("carries an upstream's RST_STREAM to the client with its code", async () => {
    const path = `/reset-after-headers/${NGHTTP2_ENHANCE_YOUR_CALM}`;
    const since = sc.recorder.started.length;
    const { session, closed } = open(sc.url, path);
    assert.equal(await closed, NGHTTP2_ENHANCE_YOUR_CALM);
    const rec = await sc.recorder.waitForCall((c) => c.path === path, { since });
    assert.deepEqual(rec.reset, { side: 'upstream', code: NGHTTP2_ENHANCE_YOUR_CALM });
    assert.equal(rec.responseBytes, 'partial'.length);
    session.close();
  });

  it('passes REFUSED_STREAM before headers on as REFUSED_STREAM (clients may retry it)', async () => {
    const { session, req, closed } = open(sc.url, '/refuse');
    let responded = false;
    req.on('response', () => (responded = true));
    assert.equal(await closed, NGHTTP2_REFUSED_STREAM);
    assert.equal(responded, false);
    session.close();
  });

  it("counts an upstream's GOAWAY and opens a new session for the next call", async () => {
    const first = await new Promise<string>((resolve) => {
      const s = http2.connect(sc.url);
      const r = s.request({ ':path': '/goaway' });
      let body = '';
      r.on('data', (d) => (body += d)).on('end', () => {
        s.close();
        resolve(body);
      });
    });
    assert.equal(first, 'bye');
    await waitFor(() => sc.recorder.goaways.find((g) => g.side === 'upstream'), 1000);
    const upstreamSessionsBefore = sc.recorder.opened.filter((c) => c.side === 'upstream').length;
    const second = await new Promise<string>((resolve) => {
      const s = http2.connect(sc.url);
      const r = s.request({ ':path': '/after-goaway' });
      let body = '';
      r.on('data', (d) => (body += d)).on('end', () => {
        s.close();
        resolve(body);
      });
    });
    assert.equal(second, 'ok');
    assert.equal(sc.recorder.opened.filter((c) => c.side === 'upstream').length, upstreamSessionsBefore + 1);
  });

  it("counts a client's GOAWAY", async () => {
    const s = http2.connect(sc.url);
    await new Promise((r) => s.once('connect', r));
    s.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
    await waitFor(() => sc.recorder.goaways.find((g) => g.side === 'client' && g.code === NGHTTP2_ENHANCE_YOUR_CALM), 1000);
    s.destroy();
  });
});
