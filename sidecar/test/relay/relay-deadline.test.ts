// --enforce-deadlines on the relay: a caller past its deadline gets
// DEADLINE_EXCEEDED (or, mid-response, RST_STREAM CANCEL) from the relay, the
// upstream gets RST_STREAM CANCEL, and the upstream's late frames for that
// stream pass on without breaking the connection — also when the client made
// its header table smaller, so that the relay's own header block must carry the
// table size update it owes.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 0, 3]), Buffer.from('abc')]);
const { NGHTTP2_CANCEL } = http2.constants;

interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  rstCode: number | undefined;
  messagesBytes: number;
}

function call(session: http2.ClientHttp2Session, path: string, timeout?: string): Promise<Answer> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...(timeout ? { 'grpc-timeout': timeout } : {}) });
    const answer: Answer = { headers: {}, trailers: {}, rstCode: undefined, messagesBytes: 0 };
    req.on('response', (h) => (answer.headers = h));
    req.on('trailers', (t) => (answer.trailers = t));
    req.on('data', (d: Buffer) => (answer.messagesBytes += d.length));
    req.on('error', () => {});
    req.on('close', () => resolve({ ...answer, rstCode: req.rstCode }));
    req.end(MESSAGE);
  });
}

describe('relay: --enforce-deadlines', () => {
  let upstream: http2.Http2Server;
  /** rstCode of each stream the upstream saw closed, by path. */
  const closed = new Map<string, number | undefined>();
  /**
   * The rest of each /slow and /stream answer, by path, held until the test lets it
   * go: the relay's answer comes first by construction, not because a timer of the
   * upstream's is slower than the relay's on this machine.
   */
  const held = new Map<string, () => void>();
  let sc: TestSidecar;
  before(async () => {
    // /fast answers at once; /slow answers when let go; /stream sends its headers and one message at once, the rest when let go.
    upstream = http2.createServer();
    upstream.on('stream', (stream, headers) => {
      const path = String(headers[':path']);
      stream.on('error', () => {});
      stream.on('close', () => closed.set(path, stream.rstCode));
      stream.resume();
      const respond = (): void => stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-padding': 'p'.repeat(100) }, { waitForTrailers: true });
      const finish = (): void => {
        if (stream.destroyed) return;
        if (!stream.headersSent) respond();
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(MESSAGE);
      };
      if (path.startsWith('/stream')) {
        respond();
        stream.write(MESSAGE);
      }
      if (path.startsWith('/fast')) setImmediate(finish);
      else held.set(path, finish);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    sc = await startTestSidecar(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, ['--data-plane', 'relay', '--enforce-deadlines']);
  });
  after(async () => {
    for (const finish of held.values()) finish();
    await sc.stop();
    await new Promise((r) => upstream.close(r));
  });

  for (const headerTableSize of [4096, 0, 100]) {
    it(`answers DEADLINE_EXCEEDED before the upstream does, and the connection goes on (client header table ${headerTableSize})`, async () => {
      const session = http2.connect(sc.url, { settings: { headerTableSize } });
      session.on('error', () => {});
      // A call first, so that the tables hold entries the relay's block must not disturb.
      assert.equal((await call(session, `/fast/a/${headerTableSize}`)).trailers['grpc-status'], '0');
      const slow = `/slow/${headerTableSize}`;
      // The upstream holds its answer until let go below: DEADLINE_EXCEEDED here can only be the relay's.
      const late = await call(session, slow, '100m');
      assert.equal(late.headers['grpc-status'], '4');
      const rec = await sc.recorder.waitForCall((c) => c.path === slow);
      assert.equal(rec.deadlineEnforced, true);
      const { code } = await eventually(() => closed.has(slow) && { code: closed.get(slow) }, `the upstream's ${slow} stream closed`);
      assert.equal(code, NGHTTP2_CANCEL);
      // The upstream's own late answer (if it still sends one) passes; the next calls decode as before.
      held.get(slow)!();
      for (const n of [1, 2]) {
        const next = await call(session, `/fast/b${n}/${headerTableSize}`);
        assert.equal(next.headers[':status'], 200);
        assert.equal(next.headers['x-padding'], 'p'.repeat(100));
        assert.equal(next.trailers['grpc-status'], '0');
      }
      assert.equal(session.destroyed, false);
      session.close();
    });
  }

  it('starts its own header block with the table size update it owes when it answers before the upstream has', async () => {
    const session = http2.connect(sc.url, { settings: { headerTableSize: 0 } });
    session.on('error', () => {});
    const late = await call(session, '/slow/first', '100m');
    assert.equal(late.headers['grpc-status'], '4');
    held.get('/slow/first')!();
    const next = await call(session, '/fast/after-first');
    assert.deepEqual([next.headers[':status'], next.headers['x-padding'], next.trailers['grpc-status']], [200, 'p'.repeat(100), '0']);
    assert.equal(session.destroyed, false);
    session.close();
  });

  it('resets a response already under way with CANCEL, the proxy\'s reset', async () => {
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    const answer = await call(session, '/stream', '100m');
    assert.equal(answer.rstCode, NGHTTP2_CANCEL);
    assert.equal(answer.messagesBytes, MESSAGE.length);
    const rec = await sc.recorder.waitForCall((c) => c.path === '/stream');
    assert.deepEqual([rec.deadlineEnforced, rec.reset], [true, { side: 'proxy', code: NGHTTP2_CANCEL }]);
    session.close();
  });
});
