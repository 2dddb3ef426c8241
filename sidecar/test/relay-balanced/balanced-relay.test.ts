// The balanced relay (--mode outbound --outbound-data-plane relay) with real
// clients and endpoints: each call on its own pick over shared endpoint
// connections, bodies larger than every window in both directions, the same
// records as the terminating path however the bytes are split, and what the
// endpoints do to calls (a stream limit, a reset, a refusal, a connection lost).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, deterministicBytes, startGrpcJsEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import type { CallRecord } from '../../src/call/call-record.ts';
import { makeSelfSignedCert } from '../support/certs.ts';
import { startTestSidecar } from '../support/sidecar.ts';
import { startSplittingHop } from '../support/splitting-hop.ts';

const BALANCED = ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2'];
const TERMINATE = ['--mode', 'outbound', '--outbound-data-plane', 'terminate', '--upstream-protocol', 'http2'];

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

function client(port: number, options: grpc.ChannelOptions = {}): Client {
  return new GrpcJsEchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.max_receive_message_length': 64 << 20, 'grpc.max_send_message_length': 64 << 20, ...options }) as unknown as Client;
}

function unary(c: Client, req: Partial<EchoRequestObject>, opts: grpc.CallOptions = {}): Promise<{ err: grpc.ServiceError | null; res?: EchoResponseObject }> {
  return new Promise((resolve) => c.Echo(req, opts, (err, res) => resolve({ err, res })));
}

function serverStream(c: Client, req: Partial<EchoRequestObject>): Promise<{ n: number; sha: string }> {
  return new Promise((resolve, reject) => {
    let n = 0;
    const hash = createHash('sha256');
    const s = c.ServerStream(req);
    s.on('data', (r: EchoResponseObject) => {
      n++;
      hash.update(r.payload);
    });
    s.on('error', reject);
    s.on('end', () => resolve({ n, sha: hash.digest('hex') }));
  });
}

const facts = (r: CallRecord): unknown => ({ protocol: r.protocol, path: r.path, httpStatus: r.httpStatus, grpcStatus: r.grpcStatus, requestMessages: r.requestMessages, responseMessages: r.responseMessages, requestBytes: r.requestBytes, responseBytes: r.responseBytes, reset: r.reset });

describe('balanced relay: grpc-js through it', () => {
  const pods: Upstream[] = [];
  let endpoints: string;
  before(async () => {
    for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) pods.push(await startGrpcJsEcho({ host }));
    endpoints = pods.map((p) => `${p.host}:${p.port}`).join(',');
  });
  after(async () => {
    await Promise.all(pods.map((p) => p.close()));
  });

  it('picks an endpoint per call over three client connections, sharing one connection per endpoint', async () => {
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', endpoints, '--balance', 'round_robin']);
    const clients = [0, 1, 2].map(() => client(sc.port, { 'grpc.use_local_subchannel_pool': 1 }));
    for (let i = 0; i < 100; i++) for (const c of clients) assert.equal((await unary(c, { message: `m${i}` })).res?.message, `m${i}`);
    const ended = await sc.recorder.waitForEnded(300);
    const per = new Map<string, number>();
    for (const r of ended) per.set(r.upstream!, (per.get(r.upstream!) ?? 0) + 1);
    assert.deepEqual([...per.values()], [100, 100, 100]);
    assert.ok(ended.every((r) => r.grpcStatus === 0 && r.reset === undefined));
    // Three client connections, and one connection to each endpoint that all of them share.
    assert.equal(sc.recorder.opened.filter((c) => c.side === 'downstream').length, 3);
    assert.equal(sc.recorder.opened.filter((c) => c.side === 'upstream').length, 3);
    for (const c of clients) c.close();
    await sc.stop();
  });

  it('carries bodies many times every window, both ways, byte for byte', async () => {
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', endpoints]);
    const c = client(sc.port);
    const big = deterministicBytes(3 * 1024 * 1024, 7);
    // Echo answers the request's own payload when no response size is asked.
    const calls = await Promise.all([0, 1, 2, 3].map(() => unary(c, { message: 'big', payload: big })));
    for (const { err, res } of calls) {
      assert.equal(err, null);
      assert.ok(res!.payload.equals(big), 'the 3 MiB payload came back whole');
    }
    const stream = await serverStream(c, { message: 's', responses: 40, responseSize: 200_000 });
    assert.equal(stream.n, 40);
    const ended = await sc.recorder.waitForEnded(5);
    assert.ok(ended.every((r) => r.grpcStatus === 0 && r.reset === undefined), JSON.stringify(ended.map(facts)));
    c.close();
    await sc.stop();
  });

  it("reads each call's own method and deadline while one connection sends the same header blocks again and again", async () => {
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', endpoints]);
    const c = client(sc.port);
    try {
      const want: [string, boolean][] = [];
      for (let i = 0; i < 4; i++) {
        assert.equal((await unary(c, { message: `u${i}` })).err, null);
        assert.equal((await serverStream(c, { message: `s${i}`, responses: 2 })).n, 2);
        want.push(['Echo', false], ['ServerStream', false]);
      }
      assert.equal((await unary(c, { message: 'with a deadline' }, { deadline: Date.now() + 60_000 })).err, null);
      assert.equal((await unary(c, { message: 'without' })).err, null);
      want.push(['Echo', true], ['Echo', false]);
      const ended = await sc.recorder.waitForEnded(want.length);
      assert.deepEqual(ended.map((r) => [r.path.split('/').pop(), r.deadline !== undefined]), want);
      assert.ok(ended.every((r) => r.grpcStatus === 0 && r.responseMessages > 0), JSON.stringify(ended.map(facts)));
    } finally {
      c.close();
      await sc.stop();
    }
  });

  it('records the same calls as the terminating path, with the bytes split at random on both sides', async () => {
    const script = async (c: Client): Promise<void> => {
      assert.equal((await unary(c, { message: 'one', responseSize: 70_000 })).err, null);
      assert.equal((await unary(c, { message: 'two', failCode: grpc.status.NOT_FOUND })).err?.code, grpc.status.NOT_FOUND);
      assert.equal((await serverStream(c, { message: 's', responses: 20, responseSize: 3000 })).n, 20);
      assert.equal((await unary(c, { message: 'three', payload: deterministicBytes(300_000) })).err, null);
    };
    const pod = pods[0]!;
    const terminating = await startTestSidecar('http://orders.test:80', [...TERMINATE, '--endpoints', `${pod.host}:${pod.port}`]);
    const plain = client(terminating.port);
    await script(plain);
    plain.close();
    const expected = (await terminating.recorder.waitForEnded(4)).map(facts);
    await terminating.stop();
    for (const seed of [1, 2, 3]) {
      const upSplit = await startSplittingHop(pod.port, { seed, host: pod.host, maxPiece: 300, yieldEvery: 4 });
      const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', `${pod.host}:${upSplit.port}`]);
      const downSplit = await startSplittingHop(sc.port, { seed: seed + 100, maxPiece: 300, yieldEvery: 4 });
      const c = client(downSplit.port);
      await script(c);
      c.close();
      assert.deepEqual((await sc.recorder.waitForEnded(4)).map(facts), expected, `seed ${seed}`);
      await sc.stop();
      downSplit.close();
      upSplit.close();
    }
  });
});

/** A node:http2 endpoint whose behaviour per stream the test gives. */
async function startEndpoint(onStream: (stream: http2.ServerHttp2Stream, n: number, headers: http2.IncomingHttpHeaders) => void, settings: http2.Settings = {}): Promise<{ address: string; sessions: number; close(): Promise<void> }> {
  let n = 0;
  const server = http2.createServer({ settings });
  const state = { sessions: 0 };
  server.on('session', () => state.sessions++);
  server.on('stream', (stream, headers) => {
    // A stream the test resets errors on this side too: nothing to report.
    stream.on('error', () => {});
    onStream(stream, n++, headers);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    get sessions() {
      return state.sessions;
    },
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        setTimeout(r, 500);
      }),
  };
}

/** Answers a gRPC call OK with an empty message, after `delayMs`. */
function answerOk(stream: http2.ServerHttp2Stream, delayMs = 0): void {
  stream.on('data', () => {});
  stream.on('end', () => {
    setTimeout(() => {
      if (stream.destroyed) return;
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    }, delayMs);
  });
}

describe('balanced relay: what endpoints do to calls', () => {
  it('opens another connection when an endpoint allows two streams at once', async () => {
    const ep = await startEndpoint((s) => answerOk(s, 200), { maxConcurrentStreams: 2 });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    const calls = await Promise.all([0, 1, 2, 3, 4, 5].map(() => unary(c, { message: 'x' })));
    assert.ok(calls.every((r) => r.err === null), JSON.stringify(calls.map((r) => r.err?.message)));
    assert.equal(ep.sessions, 3, 'six calls at once over connections of two streams each');
    c.close();
    await sc.stop();
    await ep.close();
  });

  it('carries header blocks past every frame size both ways, as HEADERS and CONTINUATIONs', { timeout: 20_000 }, async () => {
    // 30,000 octets of one field: past the 16,384-octet frame size of both hops, within the 65,535-octet header list.
    const big = Array.from({ length: 30_000 }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join('');
    const received: unknown[] = [];
    const ep = await startEndpoint((s, _n, headers) => {
      received.push(headers['x-big']);
      s.on('data', () => {});
      s.on('end', () => {
        // The answer's block is the request's field reversed: what comes back is what the endpoint read.
        s.respond({ ':status': 200, 'content-type': 'application/grpc', 'x-big': String(headers['x-big']).split('').reverse().join('') }, { waitForTrailers: true });
        s.on('wantTrailers', () => s.sendTrailers({ 'grpc-status': '0' }));
        s.end(Buffer.from([0, 0, 0, 0, 0]));
      });
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const session = http2.connect(sc.url);
    const answered = await new Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders }>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers', 'x-big': big });
      let headers: http2.IncomingHttpHeaders = {};
      req.on('response', (h) => (headers = h));
      req.on('trailers', (trailers) => resolve({ headers, trailers }));
      req.on('error', reject);
      req.on('close', () => reject(new Error(`the stream closed without trailers (RST_STREAM ${req.rstCode})`)));
      req.resume();
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
    assert.deepEqual(received, [big], 'the endpoint read the request header block whole');
    assert.equal(answered.headers['x-big'], big.split('').reverse().join(''), 'the response header block came back whole');
    assert.equal(answered.trailers['grpc-status'], '0');
    const [record] = await sc.recorder.waitForEnded(1);
    assert.equal(record!.grpcStatus, 0);
    assert.equal(record!.reset, undefined);
    session.close();
    await sc.stop();
    await ep.close();
  });

  it('passes an endpoint reset on with its code, counted as the upstream\'s', async () => {
    const ep = await startEndpoint((s) => s.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const session = http2.connect(sc.url);
    const code = await new Promise<number>((resolve) => {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => {});
      req.on('close', () => resolve(req.rstCode!));
      req.resume();
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
    assert.equal(code, http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    const [record] = await sc.recorder.waitForEnded(1);
    assert.deepEqual(record!.reset, { side: 'upstream', code: http2.constants.NGHTTP2_ENHANCE_YOUR_CALM });
    session.close();
    await sc.stop();
    await ep.close();
  });

  it('sends a call the endpoint refused unprocessed once more', async () => {
    let attempts = 0;
    const ep = await startEndpoint((s, n) => {
      attempts++;
      if (n === 0) s.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      else answerOk(s);
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    assert.equal((await unary(c, { message: 'again', payload: deterministicBytes(10_000) })).err, null);
    const [record] = await sc.recorder.waitForEnded(1);
    assert.equal(record!.grpcStatus, 0);
    assert.equal(record!.reset, undefined);
    assert.equal(attempts, 2, 'refused once, answered the second time');
    c.close();
    await sc.stop();
    await ep.close();
  });

  it('answers UNAVAILABLE when the endpoint\'s connection is lost under a call, and the next call goes on a new one', async () => {
    const ep = await startEndpoint((s, n) => (n === 0 ? s.session?.destroy() : answerOk(s)));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    const lost = await unary(c, { message: 'lost' });
    assert.equal(lost.err?.code, grpc.status.UNAVAILABLE);
    assert.match(lost.err!.details, /upstream connection lost/);
    assert.equal((await unary(c, { message: 'next' })).err, null);
    const [first] = await sc.recorder.waitForEnded(2);
    assert.equal(first!.upstreamLost, true);
    c.close();
    await sc.stop();
    await ep.close();
  });
  it('sends the calls an endpoint\'s GOAWAY left out once more, on a new connection', async () => {
    const ep = await startEndpoint((s, n) => {
      // The second call of two on one connection: the endpoint's GOAWAY names the first as the last it takes, and answers only that one.
      if (n === 1) s.session?.goaway(http2.constants.NGHTTP2_NO_ERROR, 1);
      else answerOk(s, n === 0 ? 100 : 0);
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    const calls = await Promise.all([unary(c, { message: 'first' }), unary(c, { message: 'left out' })]);
    assert.deepEqual(calls.map((r) => r.err), [null, null]);
    const ended = await sc.recorder.waitForEnded(2);
    assert.deepEqual(ended.map((r) => r.grpcStatus), [0, 0]);
    assert.equal(ep.sessions, 2, 'the call left out went again on a second connection');
    assert.ok(sc.recorder.goaways.some((g) => g.side === 'upstream' && g.code === 0), JSON.stringify(sc.recorder.goaways));
    c.close();
    await sc.stop();
    await ep.close();
  });

  it('ends a call at its deadline with --enforce-deadlines, cancelling the endpoint\'s stream', async () => {
    let cancelled = false;
    const ep = await startEndpoint((s) => {
      s.on('close', () => (cancelled = s.rstCode === http2.constants.NGHTTP2_CANCEL));
      s.resume();
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address, '--enforce-deadlines']);
    const session = http2.connect(sc.url);
    const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '200m' });
      req.on('response', (h) => h['grpc-status'] !== undefined && resolve(h));
      req.on('trailers', resolve);
      req.on('error', reject);
      req.resume();
      req.end(Buffer.from([0, 0, 0, 0, 0]));
    });
    assert.equal(trailers['grpc-status'], String(grpc.status.DEADLINE_EXCEEDED));
    const [record] = await sc.recorder.waitForEnded(1);
    assert.equal(record!.deadlineEnforced, true);
    assert.equal(record!.grpcStatus, grpc.status.DEADLINE_EXCEEDED);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(cancelled, true, 'the endpoint\'s stream was reset CANCEL');
    session.close();
    await sc.stop();
    await ep.close();
  });
  it('reaches TLS endpoints (ALPN h2, verified against --upstream-ca), and serves TLS clients', async () => {
    const cert = makeSelfSignedCert();
    const server = http2.createSecureServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) });
    server.on('stream', (stream) => {
      stream.on('error', () => {});
      answerOk(stream);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as net.AddressInfo;
    const sc = await startTestSidecar(`https://127.0.0.1:${port}`, [...BALANCED, '--endpoints', `127.0.0.1:${port}`, '--upstream-ca', cert.certFile, '--tls-cert', cert.certFile, '--tls-key', cert.keyFile]);
    const c = new GrpcJsEchoClient(`localhost:${sc.port}`, grpc.credentials.createSsl(readFileSync(cert.certFile))) as unknown as Client;
    for (let i = 0; i < 3; i++) assert.equal((await unary(c, { message: 'tls' })).err, null);
    const ended = await sc.recorder.waitForEnded(3);
    assert.ok(ended.every((r) => r.grpcStatus === 0 && r.upstream === `127.0.0.1:${port}`), JSON.stringify(ended.map((r) => [r.grpcStatus, r.upstream])));
    assert.equal(sc.recorder.opened.filter((o) => o.side === 'upstream').length, 1, 'one TLS connection to the endpoint for the three calls');
    c.close();
    await sc.stop();
    await new Promise<void>((r) => {
      server.close(() => r());
      setTimeout(r, 500);
    });
  });
});
