// The balanced relay (--mode outbound --outbound-data-plane relay) with real
// clients and endpoints: each call on its own pick over shared endpoint
// connections, bodies larger than every window in both directions, the same
// records as the terminating path however the bytes are split, what the
// endpoints do to calls (a stream limit, a reset, a refusal, a connection lost
// under a call or after its whole answer),
// and each hop's own windows and tables: an endpoint's connection window and
// header table size kept to, a client held to the windows it was given, credit
// for padding and for DATA on a stream already reset, a drain's last GOAWAY;
// and what a call owes each side: a client's cancel passed on, a body sent
// twice credited once, none held past 64 KiB, the request side reset when the
// relay answers itself, :scheme https toward TLS endpoints; a rapid-reset flood
// cut, an endpoint connection let go after its GOAWAY, /debug/connections, and
// a connection's budget for held requests given back call by call.
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
import { eventually, settled } from '../../../test/support/eventually.ts';
import { FLAG, FRAME, H2_ERROR, PREFACE, frame, goawayCodes, literal, readFrames, requestBlock, resets, settings, windowUpdate } from '../../../test/support/h2-frames.ts';
import { rawConnect, type RawClient } from '../../../test/support/raw-client.ts';

const BALANCED = ['--mode', 'outbound', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2'];
const TERMINATE = ['--mode', 'outbound', '--outbound-data-plane', 'terminate', '--upstream-protocol', 'http2'];

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  Echo(req: Partial<EchoRequestObject>, metadata: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
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

  it('gives back what each call held to send again: 200 calls of 60 KB on one connection, past its 10 MiB budget in all', async () => {
    // A connection's calls hold at most 10 MiB of requests and bodies at once (relay/relay-calls.ts); each gives its part
    // back once its answer begins. Kept instead, the budget would run out after some 170 of these calls, refusing the rest.
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', endpoints]);
    const c = client(sc.port);
    try {
      const payload = deterministicBytes(60_000, 3);
      for (let i = 0; i < 200; i++) assert.equal((await unary(c, { message: `m${i}`, payload, responseSize: 1 })).err, null, `call ${i}`);
      const ended = await sc.recorder.waitForEnded(200);
      assert.ok(ended.every((r) => r.grpcStatus === 0 && r.reset === undefined));
    } finally {
      c.close();
      await sc.stop();
    }
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

/** A gRPC request's header block, for clients on raw frames. */
const grpcRequestBlock = (path = '/echo.v1.EchoService/Echo'): Buffer => requestBlock(path, 'POST', [literal('content-type', 'application/grpc')]);

/** The WINDOW_UPDATE increments the relay has sent a raw client on stream `id` (0: the connection), summed. */
const creditedTo = (c: RawClient, id: number): number =>
  readFrames(c.received())
    .filter((f) => f.type === FRAME.WINDOW_UPDATE && f.streamId === id)
    .reduce((n, f) => n + f.payload.readUInt32BE(0), 0);

/** A whole gRPC answer on raw frames: `:status: 200` (HPACK static entry 8), one empty message, `grpc-status: 0`. */
const okAnswer = (id: number): Buffer =>
  Buffer.concat([
    frame(FRAME.HEADERS, FLAG.END_HEADERS, id, Buffer.concat([Buffer.from([0x88]), literal('content-type', 'application/grpc')])),
    frame(FRAME.DATA, 0, id, Buffer.alloc(5)),
    frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, id, literal('grpc-status', '0')),
  ]);

/**
 * An endpoint on raw frames that controls its connection window to the octet
 * (node:http2 widens its own): SETTINGS_INITIAL_WINDOW_SIZE `streamWindow`, no
 * WINDOW_UPDATE on the connection until `openConnectionWindow`, and each call
 * answered OK once its request ended. A frame it cannot take is kept in `errors`.
 */
async function startWindowEndpoint(streamWindow: number): Promise<{
  address: string;
  /** DATA octets received on stream `id`, or on every stream. */
  dataOctets(id?: number): number;
  /** Requests that ended (END_STREAM). */
  ended(): number;
  errors: string[];
  openConnectionWindow(increment: number): void;
  close(): Promise<void>;
}> {
  const perStream = new Map<number, number>();
  const errors: string[] = [];
  let ended = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
    socket.write(settings([[0x4 /* SETTINGS_INITIAL_WINDOW_SIZE */, streamWindow]]));
    let buf = Buffer.alloc(0);
    let prefaced = false;
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      if (!prefaced) {
        if (buf.length < PREFACE.length) return;
        prefaced = true;
        buf = buf.subarray(PREFACE.length);
      }
      const frames = readFrames(buf);
      for (const f of frames) {
        buf = buf.subarray(9 + f.payload.length);
        if (f.type === FRAME.SETTINGS && !(f.flags & FLAG.ACK)) socket.write(settings([], FLAG.ACK));
        if (f.type === FRAME.GOAWAY) errors.push(`GOAWAY ${f.payload.readUInt32BE(4)} from the relay`);
        if (f.type === FRAME.DATA) perStream.set(f.streamId, (perStream.get(f.streamId) ?? 0) + f.payload.length);
        if ((f.type === FRAME.DATA || f.type === FRAME.HEADERS) && f.flags & FLAG.END_STREAM) {
          ended++;
          socket.write(okAnswer(f.streamId));
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    dataOctets: (id) => (id === undefined ? [...perStream.values()].reduce((a, b) => a + b, 0) : (perStream.get(id) ?? 0)),
    ended: () => ended,
    errors,
    openConnectionWindow: (increment) => {
      for (const s of sockets) s.write(windowUpdate(0, increment));
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
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

  it("keeps to an endpoint's connection window when the endpoint's stream windows are larger", async () => {
    // The endpoint gives each stream 1 MiB (SETTINGS_INITIAL_WINDOW_SIZE) but its connection only HTTP/2's first
    // 65,535 octets (RFC 9113 §6.9.2), and credits nothing until the test says: four requests of 100,000 octets at
    // once may bring it 65,535 octets of DATA, no more, and the rest once the connection's window opens.
    const ep = await startWindowEndpoint(1 << 20);
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    try {
      const calls = Promise.all([1, 2, 3, 4].map((i) => unary(c, { message: 'big', payload: deterministicBytes(100_000, i) })));
      // Once the flow has stopped: what the window allowed, and not an octet more.
      assert.equal(await settled(() => ep.dataOctets(), 300, 5000), 65_535, 'DATA up to the connection window, none past it');
      assert.deepEqual(ep.errors, []);
      ep.openConnectionWindow(1 << 20);
      assert.deepEqual((await calls).map((r) => r.err?.message ?? null), [null, null, null, null]);
      assert.equal(ep.ended(), 4);
      // Every octet of the four requests, of one size each, arrived.
      assert.equal(ep.dataOctets(), 4 * ep.dataOctets(1));
      const ended = await sc.recorder.waitForEnded(4);
      assert.ok(ended.every((r) => r.grpcStatus === 0 && r.reset === undefined), JSON.stringify(ended.map(facts)));
    } finally {
      c.close();
      await sc.stop();
      await ep.close();
    }
  });

  it("holds a client to the windows it was given: a stream past its own is reset, a connection past its own ended (FLOW_CONTROL_ERROR)", async () => {
    // The endpoint takes no more than its connection's first 65,535 octets, so what a client sends past that stays
    // with the relay, bounded by the windows the relay gave the client: 256 KiB a stream, 1 MiB the connection.
    const ep = await startWindowEndpoint(1 << 20);
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    /** `octets` of DATA on `id`, in frames of 16,384, sent without waiting for any WINDOW_UPDATE. */
    const data = (id: number, octets: number): Buffer[] => {
      const out: Buffer[] = [];
      for (let at = 0; at < octets; at += 16_384) out.push(frame(FRAME.DATA, 0, id, Buffer.alloc(Math.min(16_384, octets - at), 1)));
      return out;
    };
    const open = async (): Promise<RawClient> => {
      const c = await rawConnect(sc.port);
      c.socket.write(Buffer.concat([PREFACE, settings()]));
      return c;
    };
    try {
      // One stream: its 256 KiB and one octet more.
      const one = await open();
      one.socket.write(Buffer.concat([frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, grpcRequestBlock()), ...data(1, 256 * 1024 + 1)]));
      const reset = await eventually(() => resets(readFrames(one.received())).get(1), 'RST_STREAM on stream 1', 5000);
      assert.equal(reset, H2_ERROR.FLOW_CONTROL_ERROR);
      assert.deepEqual(goawayCodes(readFrames(one.received())), [], 'a stream error: the connection goes on');
      one.socket.destroy();
      // Five streams of 240 KiB each, every one within its window: 1,200 KiB, past the connection's 1 MiB.
      const five = await open();
      five.socket.write(Buffer.concat([1, 3, 5, 7, 9].flatMap((id) => [frame(FRAME.HEADERS, FLAG.END_HEADERS, id, grpcRequestBlock()), ...data(id, 240 * 1024)])));
      const codes = await eventually(() => goawayCodes(readFrames(five.received())).at(0), 'a GOAWAY', 5000);
      assert.equal(codes, H2_ERROR.FLOW_CONTROL_ERROR);
      await five.closed;
      five.socket.destroy();
    } finally {
      await sc.stop();
      await ep.close();
    }
  });

  it("credits a client's DATA padding back, as octets nothing passes on", async () => {
    // 600 DATA frames of one octet each, padded (RFC 9113 §6.1) with 255: 154,200 octets of the stream's window spent,
    // 600 of them data. The relay credits a stream back once half its 256 KiB window is owed: only the padding gets it there.
    const ep = await startEndpoint((s) => answerOk(s));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = await rawConnect(sc.port);
    try {
      const padded = (i: number): Buffer => frame(FRAME.DATA, 0x8 /* PADDED */, 1, Buffer.concat([Buffer.from([255, i % 256]), Buffer.alloc(255)]));
      c.socket.write(Buffer.concat([PREFACE, settings(), frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, grpcRequestBlock()), ...Array.from({ length: 600 }, (_, i) => padded(i))]));
      const credited = (): number => creditedTo(c, 1);
      await eventually(() => credited() >= 128 * 1024, 'a WINDOW_UPDATE on stream 1 for the padding', 5000);
      assert.deepEqual(goawayCodes(readFrames(c.received())), []);
    } finally {
      c.socket.destroy();
      await sc.stop();
      await ep.close();
    }
  });

  it('credits the connection for DATA still arriving on a stream the relay has reset', async () => {
    // The endpoint answers before reading the request, and its stream is reset (NO_ERROR) toward the client. DATA the
    // client had on the way still spends the connection's window (RFC 9113 §6.9): 600 KiB of it, past half the 1 MiB
    // window, must come back as a WINDOW_UPDATE on the connection, or the client's window would shrink for good.
    const ep = await startEndpoint((s) => {
      s.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '0' }, { endStream: true });
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = await rawConnect(sc.port);
    try {
      c.socket.write(Buffer.concat([PREFACE, settings(), frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, grpcRequestBlock())]));
      const code = await eventually(() => resets(readFrames(c.received())).get(1), 'RST_STREAM on stream 1', 5000);
      assert.equal(code, H2_ERROR.NO_ERROR, 'the answer is whole: the request need not be sent (RFC 9113 §8.1)');
      c.socket.write(Buffer.concat(Array.from({ length: 600 / 16 }, () => frame(FRAME.DATA, 0, 1, Buffer.alloc(16 * 1024)))));
      const credited = (): number => creditedTo(c, 0);
      // The first WINDOW_UPDATE on the connection opens it from 65,535 to 1 MiB; what follows is credit.
      await eventually(() => credited() - (1024 * 1024 - 65_535) >= 512 * 1024, 'a WINDOW_UPDATE on the connection for that DATA', 5000);
      assert.deepEqual(goawayCodes(readFrames(c.received())), [], 'the connection goes on');
      // The endpoint's reset came after its whole answer: the call is whole, not reset by the upstream.
      const [record] = await sc.recorder.waitForEnded(1);
      assert.deepEqual([record!.grpcStatus, record!.reset], [0, undefined]);
    } finally {
      c.socket.destroy();
      await sc.stop();
      await ep.close();
    }
  });

  it("refuses a stream opened after a drain's last GOAWAY (REFUSED_STREAM), sending it to no endpoint, and finishes the call in flight", async () => {
    const held: http2.ServerHttp2Stream[] = [];
    const paths: string[] = [];
    const ep = await startEndpoint((s, _n, headers) => {
      paths.push(String(headers[':path']));
      held.push(s);
    });
    // A drain that waits for the call in flight, however slow the machine.
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address, '--drain-timeout', '30s']);
    const c = await rawConnect(sc.port);
    const call = (id: number): Buffer[] => [frame(FRAME.HEADERS, FLAG.END_HEADERS, id, grpcRequestBlock(`/echo.v1.EchoService/Echo${id}`)), frame(FRAME.DATA, FLAG.END_STREAM, id, Buffer.alloc(5))];
    c.socket.write(Buffer.concat([PREFACE, settings(), ...call(1)]));
    await eventually(() => held.length === 1, 'the first call at the endpoint', 5000);
    const draining = sc.stop();
    try {
      // The two-step GOAWAY: the first names 2^31-1, the last the stream the relay works on, 1.
      const goaways = await eventually(() => {
        const g = readFrames(c.received()).filter((f) => f.type === FRAME.GOAWAY);
        return g.length === 2 ? g : undefined;
      }, 'the drain\'s two GOAWAYs', 5000);
      assert.deepEqual(goaways.map((g) => g.payload.readUInt32BE(0) & 0x7fffffff), [0x7fffffff, 1]);
      // A client that missed the last GOAWAY opens stream 3: not processed, so the client may send it elsewhere (RFC 9113 §6.8).
      c.socket.write(Buffer.concat(call(3)));
      const code = await eventually(() => resets(readFrames(c.received())).get(3), 'RST_STREAM on stream 3', 5000);
      assert.equal(code, H2_ERROR.REFUSED_STREAM);
      answerOk(held[0]!);
      await eventually(() => readFrames(c.received()).some((f) => f.streamId === 1 && f.type === FRAME.HEADERS && f.flags & FLAG.END_STREAM), 'the first call answered whole', 5000);
      assert.deepEqual(paths, ['/echo.v1.EchoService/Echo1'], 'the endpoint saw the first call only');
    } finally {
      await draining;
      c.socket.destroy();
      await ep.close();
    }
  });

  it('encodes header blocks within the table size the endpoint allows, down to none', async () => {
    // SETTINGS_HEADER_TABLE_SIZE 0: the endpoint keeps no dynamic table (RFC 7541 §4.2), so no block may refer to one.
    const seen: string[] = [];
    const ep = await startEndpoint(
      (s, _n, headers) => {
        seen.push(String(headers['x-tenant']));
        answerOk(s);
      },
      { headerTableSize: 0 },
    );
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    try {
      for (let i = 0; i < 20; i++) {
        const metadata = new grpc.Metadata();
        metadata.set('x-tenant', `tenant-${i % 3}`);
        const r = await new Promise<grpc.ServiceError | null>((resolve) => c.Echo({ message: `m${i}` }, metadata, {}, (err) => resolve(err)));
        assert.equal(r, null, `call ${i}: ${r?.message}`);
      }
      assert.deepEqual(seen, Array.from({ length: 20 }, (_, i) => `tenant-${i % 3}`));
      assert.equal(ep.sessions, 1, 'one connection for the twenty calls: none ended for a COMPRESSION_ERROR');
    } finally {
      c.close();
      await sc.stop();
      await ep.close();
    }
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

  it('credits a client once for a request body sent to the endpoint twice, refused the first time', async () => {
    // The relay holds a body of up to 64 KiB while a call may be sent again. Refused with 60 KiB read, the call goes
    // again with the same 60 KiB; then 10 KiB more arrive. The client sent 70 KiB on the stream: the relay owes it 70 KiB,
    // under the half of its 256 KiB stream window that a WINDOW_UPDATE waits for. A second credit for the 60 KiB sent
    // again would give the client window for octets it never sent.
    const read = [0, 0];
    const ep = await startEndpoint((s, n) => {
      s.on('data', (d: Buffer) => {
        read[n] = (read[n] ?? 0) + d.length;
        if (n === 0 && read[0]! >= 60 * 1024) s.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      });
      if (n === 1) answerOk(s);
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = await rawConnect(sc.port);
    try {
      const data = (octets: number, flags = 0): Buffer => frame(FRAME.DATA, flags, 1, Buffer.alloc(octets, 7));
      c.socket.write(Buffer.concat([PREFACE, settings(), frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, grpcRequestBlock()), data(16_384), data(16_384), data(16_384), data(12_288)]));
      await eventually(() => read[1] === 60 * 1024, 'the call sent again with its 60 KiB', 5000);
      c.socket.write(data(10 * 1024));
      await eventually(() => read[1] === 70 * 1024, 'the 10 KiB more at the endpoint', 5000);
      const credited = (): number => creditedTo(c, 1);
      assert.equal(await settled(credited, 200, 3000), 0, 'no credit on the stream: 70 KiB owed, under half its window');
      c.socket.write(data(0, FLAG.END_STREAM));
      const [record] = await sc.recorder.waitForEnded(1);
      assert.deepEqual([record!.grpcStatus, record!.reset], [0, undefined]);
    } finally {
      c.socket.destroy();
      await sc.stop();
      await ep.close();
    }
  });

  it('holds no request body past 64 KiB to send again: a call refused after more is refused to its client', async () => {
    let streams = 0;
    const ep = await startEndpoint((s) => {
      streams++;
      let read = 0;
      s.on('data', (d: Buffer) => {
        read += d.length;
        if (read >= 100 * 1024) s.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      });
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = await rawConnect(sc.port);
    try {
      // 112 KiB of request body: the endpoint refuses the call once it has read 100 KiB.
      const body = Array.from({ length: 7 }, () => frame(FRAME.DATA, 0, 1, Buffer.alloc(16_384, 7)));
      c.socket.write(Buffer.concat([PREFACE, settings(), frame(FRAME.HEADERS, FLAG.END_HEADERS, 1, grpcRequestBlock()), ...body]));
      const code = await eventually(() => resets(readFrames(c.received())).get(1), 'RST_STREAM on stream 1', 5000);
      assert.equal(code, H2_ERROR.REFUSED_STREAM, 'refused, as the endpoint refused it: the client may send it again');
      assert.equal(streams, 1, 'not sent again: its body was past what the relay holds');
      const [record] = await sc.recorder.waitForEnded(1);
      assert.deepEqual(record!.reset, { side: 'upstream', code: H2_ERROR.REFUSED_STREAM });
    } finally {
      c.socket.destroy();
      await sc.stop();
      await ep.close();
    }
  });

  it("answers a call no endpoint can take at once, and resets the request's side (NO_ERROR) so the client stops sending it", async () => {
    // Nothing listens on port 1: the relay's own UNAVAILABLE ends the call while the client is still sending its body.
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', '127.0.0.1:1']);
    const session = http2.connect(sc.url);
    try {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => {});
      let status: unknown;
      req.on('response', (h) => (status ??= h['grpc-status']));
      req.on('trailers', (h) => (status ??= h['grpc-status']));
      let closed = false;
      req.on('close', () => (closed = true));
      req.resume();
      req.write(Buffer.alloc(1000));
      // The request is never ended here: only the relay's reset closes the stream.
      await eventually(() => closed, 'the stream closed by the relay', 5000);
      assert.equal(status, String(grpc.status.UNAVAILABLE));
      assert.equal(req.rstCode, http2.constants.NGHTTP2_NO_ERROR);
      const [record] = await sc.recorder.waitForEnded(1);
      assert.equal(record!.upstreamUnreachable, true);
    } finally {
      session.close();
      await sc.stop();
    }
  });

  it('cuts a client that resets its calls before their answers faster than the budget (rapid reset), serving the others', async () => {
    const ep = await startEndpoint((s) => answerOk(s));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const flood = await rawConnect(sc.port);
    const c = client(sc.port);
    try {
      // 400 calls, each reset (CANCEL) as soon as it is opened: twice the budget's burst of 200 (h2/reset-budget.ts).
      const calls = Array.from({ length: 400 }, (_, i) => [frame(FRAME.HEADERS, FLAG.END_HEADERS, 2 * i + 1, grpcRequestBlock()), frame(FRAME.RST_STREAM, 0, 2 * i + 1, Buffer.from([0, 0, 0, http2.constants.NGHTTP2_CANCEL]))]).flat();
      flood.socket.write(Buffer.concat([PREFACE, settings(), ...calls]));
      const code = await eventually(() => goawayCodes(readFrames(flood.received())).at(0), 'a GOAWAY', 5000);
      assert.equal(code, H2_ERROR.ENHANCE_YOUR_CALM);
      await flood.closed;
      assert.deepEqual(sc.recorder.goaways, [{ side: 'proxy', code: H2_ERROR.ENHANCE_YOUR_CALM }], 'counted as the sidecar ending the connection');
      assert.equal((await unary(c, { message: 'after the flood' })).err, null, 'another client is served');
    } finally {
      flood.socket.destroy();
      c.close();
      await sc.stop();
      await ep.close();
    }
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
  it("ends a call whole when the endpoint's connection goes after its whole answer, resetting only the request's side (NO_ERROR)", async () => {
    // An endpoint on raw frames answers the call as soon as its headers arrive, then closes its connection (FIN), with the
    // client's request still open: the answer is whole, so the call is OK and only the request side is stopped (RFC 9113 §8.1).
    const server = net.createServer((socket) => {
      socket.on('error', () => {});
      socket.write(settings());
      let buf = Buffer.alloc(0);
      socket.on('data', (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        if (buf.length < PREFACE.length) return;
        const f = readFrames(buf.subarray(PREFACE.length)).find((x) => x.type === FRAME.HEADERS);
        if (f) socket.end(Buffer.concat([settings([], FLAG.ACK), okAnswer(f.streamId)]));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', `127.0.0.1:${(server.address() as net.AddressInfo).port}`]);
    const session = http2.connect(sc.url);
    try {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => {});
      let trailers: http2.IncomingHttpHeaders | undefined;
      req.on('trailers', (h) => (trailers = h));
      req.resume();
      req.write(Buffer.from([0, 0, 0, 0, 0]));
      // The request is never ended here: only the relay's reset closes the stream.
      await new Promise((r) => req.on('close', r));
      assert.equal(trailers?.['grpc-status'], '0', 'the whole answer reached the client');
      assert.equal(req.rstCode, http2.constants.NGHTTP2_NO_ERROR);
      const [record] = await sc.recorder.waitForEnded(1);
      assert.equal(record!.grpcStatus, 0);
      assert.equal(record!.reset, undefined, 'a whole call, not a reset one');
      assert.equal(record!.upstreamLost, false);
    } finally {
      session.close();
      await sc.stop();
      await new Promise((r) => server.close(r));
    }
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

  it("passes a client's cancel on to the endpoint's stream (RST_STREAM CANCEL), counted as the client's", async () => {
    let arrived = false;
    let code: number | undefined;
    const ep = await startEndpoint((s) => {
      arrived = true;
      s.on('close', () => (code = s.rstCode));
      s.resume();
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const session = http2.connect(sc.url);
    try {
      const req = session.request({ ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' });
      req.on('error', () => {});
      req.write(Buffer.from([0, 0, 0, 0, 0]));
      await eventually(() => arrived, 'the call at the endpoint', 5000);
      req.close(http2.constants.NGHTTP2_CANCEL);
      await eventually(() => code !== undefined, "the endpoint's stream closed", 5000);
      assert.equal(code, http2.constants.NGHTTP2_CANCEL);
      const [record] = await sc.recorder.waitForEnded(1);
      assert.deepEqual(record!.reset, { side: 'client', code: http2.constants.NGHTTP2_CANCEL });
    } finally {
      session.close();
      await sc.stop();
      await ep.close();
    }
  });

  it('closes its connection to an endpoint that said GOAWAY once the calls on it are done, or at once when none are', async () => {
    let idle: http2.Http2Session | undefined;
    const ep = await startEndpoint((s, n) => {
      // The first connection says GOAWAY with the call on it in flight, then answers it.
      if (n === 0) s.session!.goaway(http2.constants.NGHTTP2_NO_ERROR, s.id);
      else idle = s.session;
      answerOk(s, n === 0 ? 100 : 0);
    });
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    try {
      assert.equal((await unary(c, { message: 'in flight at the GOAWAY' })).err, null);
      // Let go at the relay: node:http2 leaves its side of a connection open after its GOAWAY, so the relay closes it whole.
      const upstreamClosed = (): number => sc.recorder.closed.filter((r) => r.side === 'upstream').length;
      await eventually(() => upstreamClosed() === 1, 'the first connection closed after its call', 5000);
      assert.equal((await unary(c, { message: 'on a new connection' })).err, null);
      assert.equal(ep.sessions, 2);
      // The second connection says GOAWAY with nothing on it.
      idle!.goaway(http2.constants.NGHTTP2_NO_ERROR, 1);
      await eventually(() => upstreamClosed() === 2, 'the idle connection closed at its GOAWAY', 5000);
    } finally {
      c.close();
      await sc.stop();
      await ep.close();
    }
  });

  it("shows each endpoint connection's calls, and those in flight, on /debug/connections", async () => {
    const held: http2.ServerHttp2Stream[] = [];
    const ep = await startEndpoint((s) => held.push(s));
    const sc = await startTestSidecar('http://orders.test:80', [...BALANCED, '--endpoints', ep.address]);
    const c = client(sc.port);
    const upstream = async (): Promise<unknown> => {
      const view = (await (await fetch(`${sc.adminUrl}/debug/connections`)).json()) as { upstream: { list: { calls: number; calls_active: number }[] } };
      return view.upstream.list.map((l) => ({ calls: l.calls, active: l.calls_active }));
    };
    try {
      const call = unary(c, { message: 'held' });
      await eventually(() => held.length === 1, 'the call at the endpoint', 5000);
      assert.deepEqual(await upstream(), [{ calls: 1, active: 1 }]);
      answerOk(held[0]!);
      assert.equal((await call).err, null);
      await eventually(async () => JSON.stringify(await upstream()) === JSON.stringify([{ calls: 1, active: 0 }]), 'the call no longer in flight', 5000);
    } finally {
      c.close();
      await sc.stop();
      await ep.close();
    }
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
    const schemes: unknown[] = [];
    server.on('stream', (stream, headers) => {
      schemes.push(headers[':scheme']);
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
    assert.deepEqual(schemes, ['https', 'https', 'https'], 'the endpoint, reached over TLS, reads :scheme https');
    c.close();
    await sc.stop();
    await new Promise<void>((r) => {
      server.close(() => r());
      setTimeout(r, 500);
    });
  });
});
