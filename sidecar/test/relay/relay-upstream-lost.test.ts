// The relay when the upstream's connection breaks under calls in flight (the app
// killed): each call ends in its own protocol's words — gRPC trailers with
// grpc-status 14, gRPC-Web's trailer frame, Connect's end-stream message, a REST
// reset, UNAVAILABLE for a call not yet answered — never as the client's cancel.
// The relay's header blocks must decode after blocks that filled the client's
// dynamic table (and carry a table size update the client's SETTINGS made owed),
// and its DATA must fit the client's flow-control windows, however small.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.ts';
import { CONNECTION_CLOSED } from '../../src/call/call-record.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const { NGHTTP2_INTERNAL_ERROR, NGHTTP2_NO_ERROR } = http2.constants;
/** A 12-byte message in the 5-byte envelope. */
const MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 0, 7]), Buffer.from('message')]);

interface Answer {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
  body: Buffer;
  rstCode: number | undefined;
}

/** A call; `received(bytes)` is told the body bytes the client has so far, as they come. */
function call(session: http2.ClientHttp2Session, path: string, contentType: string, received: (bytes: number) => void = () => {}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'POST', ':path': path, 'content-type': contentType, te: 'trailers', 'x-request-note': 'n'.repeat(50) });
    const answer: Answer = { headers: {}, trailers: {}, body: Buffer.alloc(0), rstCode: undefined };
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('response', (h) => (answer.headers = h));
    req.on('trailers', (t) => (answer.trailers = t));
    req.on('data', (d: Buffer) => {
      chunks.push(d);
      received((bytes += d.length));
    });
    req.on('error', () => {});
    req.on('close', () => resolve({ ...answer, body: Buffer.concat(chunks), rstCode: req.rstCode }));
    req.end(MESSAGE);
  });
}

describe('relay: an upstream connection lost under calls in flight', () => {
  let upstream: http2.Http2Server;
  let sc: TestSidecar;
  /** Kills the upstream connection that carries the stream of a path, as a killed app's would die. */
  const kill = new Map<string, () => void>();
  before(async () => {
    // /whole answers whole; /stream/<n> sends headers and n messages, and its connection dies
    // once the client has them all (the test kills it); /silent never answers, and dies with
    // its connection at once.
    upstream = http2.createServer();
    // The raw socket under each session, to kill the connection as a killed app's would die (Node's http2 sessions forbid it).
    const raw = new Map<http2.Http2Session, Socket>();
    let newest: http2.Http2Session | undefined;
    upstream.on('session', (session) => (newest = session));
    // Emitted after the server's own listener has made the socket's session.
    upstream.on('connection', (socket: Socket) => raw.set(newest!, socket));
    upstream.on('stream', (stream, headers) => {
      const path = String(headers[':path']);
      stream.on('error', () => {});
      stream.resume();
      const contentType = String(headers['content-type']);
      const respond = (): void => stream.respond({ ':status': 200, 'content-type': contentType, 'x-padding': 'p'.repeat(100), 'x-answer-note': 'a'.repeat(40) }, { waitForTrailers: true });
      if (path.startsWith('/whole')) {
        respond();
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0', 'x-trailer-note': 't'.repeat(30) }));
        return void stream.end(MESSAGE);
      }
      if (path.startsWith('/stream/')) {
        respond();
        for (let n = Number(path.split('/')[2]); n > 0; n--) stream.write(MESSAGE);
      }
      const die = (): void => void raw.get(stream.session!)?.destroy();
      if (path.startsWith('/silent')) setImmediate(die);
      else kill.set(path, die);
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    sc = await startTestSidecar(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, ['--data-plane', 'relay', '--upstream-protocol', 'http2']);
  });
  after(async () => {
    await sc.stop();
    await new Promise((r) => upstream.close(r));
  });

  /** A session that made one whole call first, so that both HPACK tables hold entries. */
  async function warmSession(settings: http2.Settings = {}): Promise<http2.ClientHttp2Session> {
    const session = http2.connect(sc.url, { settings });
    session.on('error', () => {});
    const warm = await call(session, '/whole', 'application/grpc');
    assert.deepEqual([warm.headers['x-padding'], warm.trailers['grpc-status']], ['p'.repeat(100), '0']);
    return session;
  }

  /** A /stream/<n> call whose upstream connection dies once the client has its n messages: no timer decides whether they got out first. */
  const streamCall = (session: http2.ClientHttp2Session, path: string, contentType: string): Promise<Answer> => {
    const messages = Number(path.split('/')[2]);
    return call(session, path, contentType, (bytes) => {
      if (bytes >= messages * MESSAGE.length) kill.get(path)?.();
    });
  };
  /** The record of the call on `path` (each test's path is its own), once it has ended. */
  const recordOf = (path: string) => sc.recorder.waitForCall((r) => r.path === path);

  for (const headerTableSize of [4096, 100, 0]) {
    it(`ends a gRPC stream under way with trailers grpc-status 14 that decode after the upstream's indexed blocks (client header table ${headerTableSize})`, async () => {
      const session = await warmSession({ headerTableSize });
      const path = `/stream/2/${headerTableSize}`;
      const answer = await streamCall(session, path, 'application/grpc');
      assert.equal(answer.headers['x-answer-note'], 'a'.repeat(40));
      assert.equal(answer.body.length, 2 * MESSAGE.length);
      assert.deepEqual([answer.trailers['grpc-status'], answer.trailers['grpc-message'], answer.rstCode], ['14', 'upstream connection lost', NGHTTP2_NO_ERROR]);
      const rec = await recordOf(path);
      assert.deepEqual([rec.grpcStatus, rec.reset], [14, { side: 'upstream', code: CONNECTION_CLOSED }]);
      session.destroy();
    });
  }

  it('ends a gRPC-Web stream with its trailer frame, cut to fit a client stream window of 40 bytes', async () => {
    const session = await warmSession({ initialWindowSize: 40 });
    const answer = await streamCall(session, '/stream/3/web', 'application/grpc-web+proto');
    const trailerFrame = 'grpc-status:14\r\ngrpc-message:upstream connection lost\r\n';
    assert.equal(answer.rstCode, NGHTTP2_NO_ERROR);
    assert.equal(answer.body.length, 3 * MESSAGE.length + 5 + trailerFrame.length);
    assert.equal(answer.body[3 * MESSAGE.length], 0x80);
    assert.equal(answer.body.subarray(3 * MESSAGE.length + 5).toString('latin1'), trailerFrame);
    assert.equal((await recordOf('/stream/3/web')).grpcStatus, 14);
    session.destroy();
  });

  it('ends a Connect stream with an end-stream message carrying unavailable', async () => {
    const session = await warmSession();
    const answer = await streamCall(session, '/stream/1/connect', 'application/connect+json');
    assert.equal(answer.rstCode, NGHTTP2_NO_ERROR);
    assert.equal(answer.body[MESSAGE.length], 0x02);
    assert.deepEqual(JSON.parse(answer.body.subarray(MESSAGE.length + 5).toString()), { error: { code: 'unavailable', message: 'upstream connection lost' } });
    session.destroy();
  });

  it('resets a REST response under way with INTERNAL_ERROR', async () => {
    const session = await warmSession();
    const answer = await streamCall(session, '/stream/1/rest', 'application/octet-stream');
    assert.equal(answer.rstCode, NGHTTP2_INTERNAL_ERROR);
    assert.deepEqual((await recordOf('/stream/1/rest')).reset, { side: 'upstream', code: CONNECTION_CLOSED });
    session.destroy();
  });

  it('answers a call with no response yet UNAVAILABLE, and sends GOAWAY so that the next call goes to a new connection', async () => {
    const session = await warmSession({ headerTableSize: 100 });
    let goaway: number | undefined;
    session.on('goaway', (code) => (goaway = code));
    const answer = await call(session, '/silent', 'application/grpc');
    assert.deepEqual([answer.headers['grpc-status'], answer.headers['grpc-message']], ['14', 'upstream connection lost']);
    assert.deepEqual((await recordOf('/silent')).reset, { side: 'upstream', code: CONNECTION_CLOSED });
    // The GOAWAY follows the answer; waited for, not given 20 ms to arrive.
    assert.equal(await eventually(() => goaway, 'a GOAWAY from the relay'), NGHTTP2_NO_ERROR);
    const next = await warmSession();
    next.close();
    session.destroy();
  });
});
