// The relay (--data-plane relay) with real clients and servers: what callers
// see and what the records say, with the bytes split at random on both sides,
// an upstream that cannot be reached, and hostile clients (a rapid-reset flood,
// a CONTINUATION flood, malformed frames) that are cut while others go on.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, startGrpcJsEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { FrameParser } from '../../src/relay/frame-parser.ts';
import { CLIENT_PREFACE, Flag, FrameType } from '../../src/h2/frame-types.ts';
import { encodeLiteralBlock } from '../../src/relay/frame-writer.ts';
import { EMPTY_SETTINGS, frame } from '../../src/h2/frames.ts';
import type { CallRecord } from '../../src/call/call-record.ts';
import { h2Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';
import { startSplittingHop } from '../support/splitting-hop.ts';

const RELAY = ['--data-plane', 'relay'];

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

function unary(client: Client, req: Partial<EchoRequestObject>, opts: grpc.CallOptions = {}): Promise<{ err: grpc.ServiceError | null; res?: EchoResponseObject }> {
  return new Promise((resolve) => client.Echo(req, opts, (err, res) => resolve({ err, res })));
}

function serverStream(client: Client, responses: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let n = 0;
    const s = client.ServerStream({ message: 's', responses, responseSize: 3000 });
    s.on('data', () => n++);
    s.on('error', reject);
    s.on('end', () => resolve(n));
  });
}

const facts = (r: CallRecord): unknown => ({ protocol: r.protocol, path: r.path, httpStatus: r.httpStatus, grpcStatus: r.grpcStatus, requestMessages: r.requestMessages, responseMessages: r.responseMessages, requestBytes: r.requestBytes, responseBytes: r.responseBytes, reset: r.reset, deadline: r.deadline !== undefined });

async function script(client: Client): Promise<void> {
  assert.equal((await unary(client, { message: 'one', responseSize: 20_000 })).err, null);
  assert.equal((await unary(client, { message: 'two', failCode: grpc.status.NOT_FOUND })).err?.code, grpc.status.NOT_FOUND);
  assert.equal(await serverStream(client, 20), 20);
  assert.equal((await unary(client, { message: 'three', responseSize: 10 }, { deadline: Date.now() + 30_000 })).err, null);
}

describe('relay: the same records however the bytes are split', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startGrpcJsEcho();
  });
  after(async () => {
    await upstream.close();
  });

  it('records the same calls through splitting hops on both sides as without them', async () => {
    sc = await startTestSidecar(upstream.url, RELAY);
    const plain = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    await script(plain);
    plain.close();
    const direct = (await sc.recorder.waitForEnded(4)).map(facts);
    await sc.stop();

    for (const seed of [1, 2, 3]) {
      const upSplit = await startSplittingHop(Number(new URL(upstream.url).port), { seed });
      const split = await startTestSidecar(`http://127.0.0.1:${upSplit.port}`, RELAY);
      const downSplit = await startSplittingHop(split.port, { seed: seed + 100 });
      const client = new GrpcJsEchoClient(`127.0.0.1:${downSplit.port}`, grpc.credentials.createInsecure()) as unknown as Client;
      await script(client);
      client.close();
      assert.deepEqual((await split.recorder.waitForEnded(4)).map(facts), direct, `seed ${seed}`);
      await split.stop();
      downSplit.close();
      upSplit.close();
    }
  });
});

describe('relay: connections', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url, RELAY);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  it('opens one upstream HTTP/2 connection per client connection, and records both', async () => {
    const clients = [0, 1, 2].map(() => new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as Client);
    for (const c of clients) assert.equal((await unary(c, { message: 'x' })).err, null);
    const upstreams = sc.recorder.opened.filter((c) => c.side === 'upstream');
    const downstreams = sc.recorder.opened.filter((c) => c.side === 'downstream');
    assert.equal(upstreams.length, 3);
    assert.equal(downstreams.length, 3);
    assert.ok([...upstreams, ...downstreams].every((c) => c.httpVersion === '2'));
    for (const c of clients) c.close();
  });

  it('passes REST over h2c through (GET and POST)', async () => {
    const get = await h2Request(sc.url, '/v1/echo/42');
    assert.equal(get.status, 200);
    const post = await h2Request(sc.url, '/v1/echo', { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.from('{"message":"hi"}') });
    assert.ok(post.status < 500, `status ${post.status}`);
    const rest = sc.recorder.ended.filter((r) => r.protocol === 'rest');
    assert.deepEqual(rest.slice(-2).map((r) => [r.httpMethod, r.httpStatus]), [['GET', 200], ['POST', post.status]]);
  });
});

describe('relay: drain', () => {
  it('sends GOAWAY and lets the calls in flight finish before it closes', async () => {
    const upstream = await startConnectEcho();
    const sc = await startTestSidecar(upstream.url, RELAY);
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    const goaway = new Promise<[number, number]>((resolve) => session.on('goaway', (code, last) => resolve([code, last])));
    const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    const inFlight = unary(client, { message: 'slow', delayMs: 400 });
    // A first call on the raw session, so that it is open when the drain starts.
    assert.equal((await h2Request(sc.url, '/v1/echo/1')).status, 200);
    await new Promise((r) => session.request({ ':path': '/v1/echo/2' }).on('response', r).resume());
    await new Promise((r) => setTimeout(r, 100));
    const drained = sc.sidecar.drain();
    // The highest stream id: whatever the client sent before reading it is answered.
    assert.deepEqual(await goaway, [http2.constants.NGHTTP2_NO_ERROR, 0x7fffffff]);
    const { err, res } = await inFlight;
    assert.equal(err, null);
    assert.equal(res?.message, 'slow');
    assert.deepEqual(await drained, { unfinished: 0 });
    client.close();
    session.destroy();
    await upstream.close();
  });
});

describe('relay: --max-connection-age', () => {
  it('sends the two-step GOAWAY and refuses a stream opened after the second, and the call in flight still finishes', async () => {
    const upstream = await startConnectEcho();
    const sc = await startTestSidecar(upstream.url, [...RELAY, '--max-connection-age', '300ms', '--max-connection-age-grace', '10s']);
    const events: string[] = [];
    const refused = new Promise<void>((resolve) => {
      const block = (path: string): Buffer => encodeLiteralBlock([[':method', 'GET'], [':scheme', 'http'], [':path', path], [':authority', 'x']]);
      const parser = new FrameParser({
        headers: (id, flags) => {
          events.push(`headers ${id}`);
          if (id === 1 && flags & Flag.END_STREAM) resolve();
        },
        // The upstream must not have seen the relay's RST_STREAM(CANCEL) for stream 3
        // before that stream's HEADERS (an idle stream: it would end the connection).
        data: (id, _chunk, flags) => {
          if (id === 1 && flags & Flag.END_STREAM) {
            events.push('end 1');
            resolve();
          }
        },
        rstStream: (id, code) => void events.push(`rst ${id} ${code}`),
        settings() {},
        goaway: (last) => {
          events.push(`goaway ${last}`);
          // After the second GOAWAY (which names stream 1), a stream the client should not have opened.
          if (last === 1) socket.write(frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 3, block('/v1/echo/3')));
        },
        windowUpdate() {},
        ping() {},
        other() {},
      }, false);
      const socket = net.connect(sc.port, '127.0.0.1', () => {
        // A slow call keeps the connection open past both steps.
        socket.write(Buffer.concat([CLIENT_PREFACE, EMPTY_SETTINGS, frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, block('/v1/slow?ms=3000'))]));
      });
      socket.on('data', (d) => parser.push(d));
      socket.on('error', () => {});
    });
    await refused;
    assert.deepEqual(events, ['goaway 2147483647', 'goaway 1', 'rst 3 7', 'headers 1', 'end 1']);
    assert.equal(sc.recorder.started.length, 1, 'the refused stream is not a call');
    assert.ok(sc.recorder.goaways.some((g) => g.side === 'proxy' && g.code === 0));
    await sc.stop();
    await upstream.close();
  });
});

describe('relay: an upstream that cannot be reached', () => {
  let sc: TestSidecar;
  before(async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    sc = await startTestSidecar(`http://127.0.0.1:${port}`, RELAY);
  });
  after(async () => {
    await sc.stop();
  });

  it('answers gRPC callers UNAVAILABLE, never a silent close', async () => {
    const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    const since = sc.recorder.started.length;
    const { err } = await unary(client, { message: 'x' }, { deadline: Date.now() + 5000 });
    client.close();
    assert.equal(err?.code, grpc.status.UNAVAILABLE);
    const rec = await sc.recorder.waitForCall((c) => c.path === '/echo.v1.EchoService/Echo', { since });
    assert.equal(rec.upstreamUnreachable, true);
    assert.equal(rec.grpcStatus, grpc.status.UNAVAILABLE);
  });

  it('answers REST callers over HTTP/2 with 503', async () => {
    const res = await h2Request(sc.url, '/v1/orders');
    assert.equal(res.status, 503);
    assert.match(res.text, /upstream unavailable/);
  });
});

/** Opens a raw HTTP/2 connection, sends `frames` after the preface, and reports the GOAWAY code the relay sends before closing. */
function rawConnection(port: number, frames: Buffer[]): Promise<number | undefined> {
  return new Promise((resolve) => {
    let code: number | undefined;
    const parser = new FrameParser({ headers() {}, data() {}, rstStream() {}, settings() {}, goaway: (_l, c) => (code = c), windowUpdate() {}, ping() {}, other() {} }, false);
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(Buffer.concat([CLIENT_PREFACE, EMPTY_SETTINGS]));
      for (const f of frames) if (!socket.destroyed) socket.write(f);
    });
    socket.on('data', (d) => parser.push(d));
    socket.on('error', () => {});
    socket.on('close', () => resolve(code));
  });
}

describe('relay: hostile clients are cut, and the sidecar goes on', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url, RELAY);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  const grpcBlock = encodeLiteralBlock([[':method', 'POST'], [':scheme', 'http'], [':path', '/echo.v1.EchoService/Echo'], [':authority', 'x'], ['content-type', 'application/grpc'], ['te', 'trailers']]);

  it('sends GOAWAY ENHANCE_YOUR_CALM to a rapid-reset flood', async () => {
    const frames: Buffer[] = [];
    for (let id = 1; id < 2 * 400; id += 2) frames.push(Buffer.concat([frame(FrameType.HEADERS, Flag.END_HEADERS, id, grpcBlock), frame(FrameType.RST_STREAM, 0, id, Buffer.from([0, 0, 0, 8]))]));
    assert.equal(await rawConnection(sc.port, [Buffer.concat(frames)]), http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  });

  it('sends GOAWAY ENHANCE_YOUR_CALM to a CONTINUATION flood', async () => {
    const frames = [frame(FrameType.HEADERS, 0, 1, grpcBlock)];
    for (let i = 0; i < 40; i++) frames.push(frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(16_000, 0x82)));
    assert.equal(await rawConnection(sc.port, frames), http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
  });

  it('sends GOAWAY PROTOCOL_ERROR on a malformed frame', async () => {
    assert.equal(await rawConnection(sc.port, [frame(FrameType.DATA, 0, 0, Buffer.from('x'))]), http2.constants.NGHTTP2_PROTOCOL_ERROR);
  });

  it('sends GOAWAY COMPRESSION_ERROR on a header block that does not decode', async () => {
    assert.equal(await rawConnection(sc.port, [frame(FrameType.HEADERS, Flag.END_HEADERS, 1, Buffer.from([0xbe]))]), http2.constants.NGHTTP2_COMPRESSION_ERROR);
  });

  it('still serves a well-behaved client', async () => {
    const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
    assert.equal((await unary(client, { message: 'still here' })).res?.message, 'still here');
    client.close();
  });
});
