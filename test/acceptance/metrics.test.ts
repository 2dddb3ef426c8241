// Acceptance: the metric contract of docs/metrics.md as a user checks it. Real
// upstreams, the real `sidecar/bin/rpcscope` (three of them), real clients in
// every protocol, and a real Prometheus scraping the admin ports. Every call
// the script makes is written down with the labels a user expects it to get;
// the exposition and PromQL must then agree with that ledger exactly.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import type { DescMessage, MessageInitShape } from '@bufbuild/protobuf';
import { ConnectError, createClient } from '@connectrpc/connect';
import type { Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { EchoService, GrpcJsEchoClient, OrderService, PROTO_DIR, startConnectEcho, startOrderService, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { parseExposition, sum, sumBy, type Sample } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const MAX_METHODS = 20;
/** Distinct unknown gRPC methods and REST routes sent by the flood: more than MAX_METHODS. */
const FLOOD = 30;
const { NGHTTP2_CANCEL, NGHTTP2_INTERNAL_ERROR, NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

// gRPC status code names by number (grpc/grpc doc/statuscodes.md), as the `code` label spells them.
const CODE = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED'] as const;
type CodeName = (typeof CODE)[number];
const codeName = (n: number): CodeName => CODE[n] ?? 'UNKNOWN';

type SidecarName = 'main' | 'orders' | 'raw' | 'enforce';
type Protocol = 'grpc' | 'grpc_web' | 'connect' | 'rest';
type StreamType = 'server_streaming' | 'client_streaming' | 'bidi_streaming';
type Detection = 'status' | 'client_cancel' | 'late_response' | 'proxy';

/** One finished call as a user expects the sidecar to label it. */
interface Expected {
  sc: SidecarName;
  protocol: Protocol;
  encoding: 'proto' | 'json' | 'text' | 'other';
  method: string;
  /** Defaults to `method`. */
  operation?: string;
  code: CodeName;
  /** '' when the caller got no status line or HEADERS. */
  http: string;
  /** [request, response] length-prefixed messages, for the framed protocols. */
  messages?: [number, number];
  stream?: StreamType;
  /** The deadline the call carried: none, one that parses, or a header that does not. */
  deadline?: 'set' | 'invalid';
  detectedBy?: Detection;
  /** `side error_code` of the reset that ended it. */
  reset?: string;
}

const ECHO = 'echo.v1.EchoService/Echo';
const SERVER_STREAM = 'echo.v1.EchoService/ServerStream';
const CLIENT_STREAM = 'echo.v1.EchoService/ClientStream';
const BIDI_STREAM = 'echo.v1.EchoService/BidiStream';
const GET_ORDER = 'order.v1.OrderService/GetOrder';
/** How long the raw upstream takes to answer a unary call, whatever deadline it was given. */
const RAW_DELAY_MS = 1000;

function frame(body: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + body.length);
  out.writeUInt32BE(body.length, 1);
  out.set(body, 5);
  return out;
}

function protoFrame<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Buffer {
  return frame(toBinary(schema, create(schema, init)));
}

interface H2Answer {
  status: number | undefined;
  grpcStatus: string | undefined;
  rstCode: number | undefined;
  bodyBytes: number;
}

/** One request on a raw HTTP/2 session: no deadline of its own, whatever its headers say. */
function h2Call(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<H2Answer> {
  return new Promise((resolve) => {
    const req = session.request(headers, { endStream: body === undefined });
    let status: number | undefined;
    let grpcStatus: string | undefined;
    let bodyBytes = 0;
    req.on('response', (h) => {
      status = Number(h[':status']);
      grpcStatus = h['grpc-status'] as string | undefined;
    });
    req.on('trailers', (t) => (grpcStatus = t['grpc-status'] as string | undefined));
    req.on('data', (d: Buffer) => (bodyBytes += d.length));
    req.on('error', () => {});
    req.on('close', () => resolve({ status, grpcStatus, rstCode: req.rstCode, bodyBytes }));
    if (body !== undefined) req.end(body);
  });
}

const grpcHeaders = (path: string, extra: http2.OutgoingHttpHeaders = {}): http2.OutgoingHttpHeaders => ({
  ':method': 'POST',
  ':path': path,
  'content-type': 'application/grpc',
  te: 'trailers',
  ...extra,
});

/** One HTTP/1.1 request on a connection of its own. */
function h1Call(url: string, opts: { method?: string; headers?: Record<string, string>; body?: Buffer } = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

// EchoService as @grpc/grpc-js calls it.
type UnaryCallback = (err: grpc.ServiceError | null, res?: EchoResponseObject) => void;
type EchoReq = Partial<EchoRequestObject>;
interface GrpcJsEcho extends grpc.Client {
  Echo(req: EchoReq, md: grpc.Metadata, opts: grpc.CallOptions, cb: UnaryCallback): grpc.ClientUnaryCall;
  ServerStream(req: EchoReq, md: grpc.Metadata, opts: grpc.CallOptions): grpc.ClientReadableStream<EchoResponseObject>;
  ClientStream(md: grpc.Metadata, opts: grpc.CallOptions, cb: UnaryCallback): grpc.ClientWritableStream<EchoReq>;
  BidiStream(md: grpc.Metadata, opts: grpc.CallOptions): grpc.ClientDuplexStream<EchoReq, EchoResponseObject>;
}

/** A connected client: deadlines in the script then measure calls, not the channel's first connection. */
async function grpcJsEcho(port: number): Promise<GrpcJsEcho> {
  const client = new GrpcJsEchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as GrpcJsEcho;
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())));
  return client;
}

function grpcJsUnary(c: GrpcJsEcho, req: EchoReq, opts: { deadlineMs?: number; cancelAfterMs?: number } = {}): Promise<CodeName> {
  return new Promise((resolve) => {
    const callOpts: grpc.CallOptions = opts.deadlineMs === undefined ? {} : { deadline: Date.now() + opts.deadlineMs };
    const call = c.Echo(req, new grpc.Metadata(), callOpts, (err) => resolve(codeName(err?.code ?? 0)));
    if (opts.cancelAfterMs !== undefined) setTimeout(() => call.cancel(), opts.cancelAfterMs);
  });
}

/** A server stream: the messages received and the final code. */
function grpcJsServerStream(c: GrpcJsEcho, req: EchoReq): Promise<[number, CodeName]> {
  return new Promise((resolve) => {
    let n = 0;
    const call = c.ServerStream(req, new grpc.Metadata(), {});
    call.on('data', () => n++);
    call.on('error', () => {});
    call.on('status', (s: grpc.StatusObject) => resolve([n, codeName(s.code)]));
  });
}

function grpcJsClientStream(c: GrpcJsEcho, n: number): Promise<CodeName> {
  return new Promise((resolve) => {
    const call = c.ClientStream(new grpc.Metadata(), {}, (err) => resolve(codeName(err?.code ?? 0)));
    for (let i = 0; i < n; i++) call.write({ message: `m${i}` });
    call.end();
  });
}

function grpcJsBidi(c: GrpcJsEcho, n: number): Promise<[number, CodeName]> {
  return new Promise((resolve) => {
    let got = 0;
    const call = c.BidiStream(new grpc.Metadata(), {});
    call.on('data', () => got++);
    call.on('error', () => {});
    call.on('status', (s: grpc.StatusObject) => resolve([got, codeName(s.code)]));
    for (let i = 0; i < n; i++) call.write({ message: `m${i}` });
    call.end();
  });
}

async function connectCode(p: Promise<unknown>): Promise<CodeName> {
  try {
    await p;
    return 'OK';
  } catch (err) {
    return codeName(ConnectError.from(err).code);
  }
}

async function* messages(n: number): AsyncGenerator<{ message: string }> {
  for (let i = 0; i < n; i++) yield { message: `m${i}` };
}

async function countStream(stream: AsyncIterable<unknown>): Promise<[number, CodeName]> {
  let n = 0;
  const code = await connectCode((async () => {
    for await (const _ of stream) n++;
  })());
  return [n, code];
}

/**
 * A raw HTTP/2 upstream that ignores deadlines, so that who noticed a miss is
 * decided by the client or the sidecar alone: the reset methods answer one
 * message and then reset, the server stream sends two and holds, anything else
 * answers one message after RAW_DELAY_MS.
 */
async function startRawUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http2.createServer();
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
    s.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    stream.resume();
    const path = String(headers[':path']);
    const resetCode = { '/reset.v1.ResetService/Internal': NGHTTP2_INTERNAL_ERROR, '/reset.v1.ResetService/Calm': NGHTTP2_ENHANCE_YOUR_CALM }[path];
    if (resetCode !== undefined) {
      // Node's close() on a stream whose request has ended would send END_STREAM and drop
      // the reset; holding the end for trailers and closing instead sends RST_STREAM alone.
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.write(frame(new Uint8Array(0)));
      const timer = setTimeout(() => {
        stream.once('wantTrailers', () => stream.close(resetCode));
        stream.end();
      }, 20);
      stream.on('close', () => clearTimeout(timer));
      return;
    }
    if (path === `/${SERVER_STREAM}`) {
      // Two messages at once, then nothing until the caller (or the sidecar) ends the stream.
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' });
      stream.write(Buffer.concat([frame(new Uint8Array(0)), frame(new Uint8Array(0))]));
      return;
    }
    const timer = setTimeout(() => {
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(frame(new Uint8Array(0)));
    }, RAW_DELAY_MS);
    stream.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      for (const s of sessions) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

async function scrape(sc: SidecarProcess): Promise<{ text: string; samples: Sample[] }> {
  const res = await fetch(`${sc.adminUrl}/metrics`);
  assert.equal(res.status, 200);
  const text = await res.text();
  return { text, samples: parseExposition(text) };
}

const sortedEntries = (o: Record<string, number>): [string, number][] => Object.entries(o).filter(([, v]) => v !== 0).sort(([a], [b]) => a.localeCompare(b));

/** How many items fall under each key; undefined keys are left out. */
function tally<T>(items: readonly T[], key: (t: T) => string | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  for (const item of items) {
    const k = key(item);
    if (k !== undefined) out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

describe('rpcscope binary: the metric contract under a scripted mix, read from /metrics and through Prometheus', () => {
  let echo: Upstream;
  let orders: Upstream;
  let raw: { url: string; close(): Promise<void> };
  const sc = {} as Record<SidecarName, SidecarProcess>;
  let prom: RunningPrometheus;
  const ledger: Expected[] = [];
  const expectCall = (e: Expected): void => void ledger.push(e);
  /** Ids, query values and header values the script sent: none may come back as a label value. */
  const rawInputs: string[] = [];
  /** Clients to close even when a step of the script fails. */
  const clients: { close(): void }[] = [];

  before(async () => {
    [echo, orders, raw] = await Promise.all([startConnectEcho(), startOrderService({ latencyScale: 0 }), startRawUpstream()]);
    const common = ['--proto', PROTO_DIR, '--drain-timeout', '2s'];
    // The raw upstream never enforces a deadline, so behind `raw` a miss is noticed by the
    // client or by the late answer, and behind `enforce` by the sidecar alone: no race decides.
    // `main` exports the full distribution (payload sizes, latency by code), to check each
    // call lands in its bucket; the others run at the default detail level.
    [sc.main, sc.orders, sc.raw, sc.enforce] = await Promise.all([
      startSidecarProcess(['--upstream', echo.url, '--max-methods', String(MAX_METHODS), '--metrics-detail', 'full', ...common]),
      startSidecarProcess(['--upstream', orders.url, ...common]),
      startSidecarProcess(['--upstream', raw.url, ...common]),
      startSidecarProcess(['--upstream', raw.url, '--enforce-deadlines', ...common]),
    ]);
    prom = await startPrometheus({
      targets: (Object.keys(sc) as SidecarName[]).map((name) => ({ address: new URL(sc[name].adminUrl).host, labels: { sidecar: name } })),
    });
    await Promise.all([mainMix(), rawMix(), ordersMix(), enforceMix()]);
    await flood();
  });

  after(async () => {
    for (const c of clients) c.close();
    await Promise.all(Object.values(sc).map((s) => s.stop()));
    await Promise.all([prom?.stop(), echo?.close(), orders?.close(), raw?.close()]);
  });

  /** Unary calls in every protocol and code, slow calls, streams of each shape, a client cancel, invalid deadline headers. */
  async function mainMix(): Promise<void> {
    const url = sc.main.url;
    const gj = await grpcJsEcho(sc.main.port);
    clients.push(gj);
    const grpcT = createGrpcTransport({ baseUrl: url });
    const connect11 = createConnectTransport({ baseUrl: url, httpVersion: '1.1' });
    const connectJson2 = createConnectTransport({ baseUrl: url, httpVersion: '2', useBinaryFormat: false });
    const web11 = createGrpcWebTransport({ baseUrl: url, httpVersion: '1.1' });
    const web2 = createGrpcWebTransport({ baseUrl: url, httpVersion: '2' });
    const client = (t: Transport) => createClient(EchoService, t);
    const session = http2.connect(url);
    session.on('error', () => {});
    clients.push(session);

    const grpcJsCalls = async (): Promise<void> => {
      const unary: [EchoReq, CodeName, { deadlineMs?: number }?][] = [
        [{ message: 'hello' }, 'OK'],
        [{ payload: Buffer.alloc(100, 7) }, 'OK', { deadlineMs: 5000 }],
        [{ delayMs: 300 }, 'OK', { deadlineMs: 5000 }],
        [{ failCode: 5 }, 'NOT_FOUND'],
        [{ failCode: 3 }, 'INVALID_ARGUMENT'],
        [{ failCode: 14 }, 'UNAVAILABLE'],
        // The upstream itself answers DEADLINE_EXCEEDED: detected by its status.
        [{ failCode: 4 }, 'DEADLINE_EXCEEDED'],
      ];
      await Promise.all(unary.map(async ([req, code, opts]) => {
        assert.equal(await grpcJsUnary(gj, req, opts), code);
        expectCall({
          sc: 'main', protocol: 'grpc', encoding: 'proto', method: ECHO, code, http: '200', messages: [1, code === 'OK' ? 1 : 0],
          ...(opts?.deadlineMs !== undefined ? { deadline: 'set' as const } : {}),
          ...(code === 'DEADLINE_EXCEEDED' ? { detectedBy: 'status' as const } : {}),
        });
      }));
      // The client gives up (no deadline) while the upstream is still working: a client CANCEL before any HEADERS.
      assert.equal(await grpcJsUnary(gj, { delayMs: 3000 }, { cancelAfterMs: 150 }), 'CANCELLED');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'CANCELLED', http: '', messages: [1, 0], reset: 'client CANCEL' });

      assert.deepEqual(await grpcJsServerStream(gj, { responses: 3 }), [3, 'OK']);
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: SERVER_STREAM, code: 'OK', http: '200', messages: [1, 3], stream: 'server_streaming' });
      assert.deepEqual(await grpcJsServerStream(gj, { responses: 2, failCode: 9 }), [2, 'FAILED_PRECONDITION']);
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: SERVER_STREAM, code: 'FAILED_PRECONDITION', http: '200', messages: [1, 2], stream: 'server_streaming' });
      assert.equal(await grpcJsClientStream(gj, 3), 'OK');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: CLIENT_STREAM, code: 'OK', http: '200', messages: [3, 1], stream: 'client_streaming' });
      assert.deepEqual(await grpcJsBidi(gj, 4), [4, 'OK']);
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: BIDI_STREAM, code: 'OK', http: '200', messages: [4, 4], stream: 'bidi_streaming' });
      gj.close();
    };

    const connectGrpcCalls = async (): Promise<void> => {
      const c = client(grpcT);
      assert.equal(await connectCode(c.echo({ message: 'hi' }, { timeoutMs: 5000 })), 'OK');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'OK', http: '200', messages: [1, 1], deadline: 'set' });
      assert.equal(await connectCode(c.echo({ failCode: 7 })), 'PERMISSION_DENIED');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'PERMISSION_DENIED', http: '200', messages: [1, 0] });
      assert.equal(await connectCode(c.clientStream(messages(2))), 'OK');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: CLIENT_STREAM, code: 'OK', http: '200', messages: [2, 1], stream: 'client_streaming' });
    };

    const connectCalls = async (): Promise<void> => {
      const c11 = client(connect11);
      assert.equal(await connectCode(c11.echo({ message: 'hi' })), 'OK');
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'proto', method: ECHO, code: 'OK', http: '200' });
      assert.equal(await connectCode(c11.echo({ failCode: 5 })), 'NOT_FOUND');
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'proto', method: ECHO, code: 'NOT_FOUND', http: '404' });
      assert.deepEqual(await countStream(c11.serverStream({ responses: 2 })), [2, 'OK']);
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'proto', method: SERVER_STREAM, code: 'OK', http: '200', messages: [1, 2], stream: 'server_streaming' });

      const cj = client(connectJson2);
      assert.equal(await connectCode(cj.echo({ message: 'hi' }, { timeoutMs: 5000 })), 'OK');
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'json', method: ECHO, code: 'OK', http: '200', deadline: 'set' });
      assert.equal(await connectCode(cj.echo({ failCode: 6 })), 'ALREADY_EXISTS');
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'json', method: ECHO, code: 'ALREADY_EXISTS', http: '409' });
      assert.deepEqual(await countStream(cj.bidiStream(messages(2))), [2, 'OK']);
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'json', method: BIDI_STREAM, code: 'OK', http: '200', messages: [2, 2], stream: 'bidi_streaming' });

      // A deadline header that does not parse: counted, and passed on untouched for connect-node to reject.
      const bad = await h1Call(`${url}/${ECHO}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'connect-protocol-version': '1', 'connect-timeout-ms': 'soon' },
        body: Buffer.from('{"message":"late"}'),
      });
      assert.equal(bad.status, 400);
      assert.equal(JSON.parse(bad.body).code, 'invalid_argument');
      rawInputs.push('soon');
      expectCall({ sc: 'main', protocol: 'connect', encoding: 'json', method: ECHO, code: 'INVALID_ARGUMENT', http: '400', deadline: 'invalid' });
    };

    const grpcWebCalls = async (): Promise<void> => {
      const w1 = client(web11);
      assert.equal(await connectCode(w1.echo({ message: 'hi' })), 'OK');
      expectCall({ sc: 'main', protocol: 'grpc_web', encoding: 'proto', method: ECHO, code: 'OK', http: '200', messages: [1, 1] });
      assert.equal(await connectCode(w1.echo({ failCode: 13 })), 'INTERNAL');
      expectCall({ sc: 'main', protocol: 'grpc_web', encoding: 'proto', method: ECHO, code: 'INTERNAL', http: '200', messages: [1, 0] });
      assert.deepEqual(await countStream(w1.serverStream({ responses: 2 })), [2, 'OK']);
      expectCall({ sc: 'main', protocol: 'grpc_web', encoding: 'proto', method: SERVER_STREAM, code: 'OK', http: '200', messages: [1, 2], stream: 'server_streaming' });
      const w2 = client(web2);
      assert.equal(await connectCode(w2.echo({ message: 'hi' })), 'OK');
      expectCall({ sc: 'main', protocol: 'grpc_web', encoding: 'proto', method: ECHO, code: 'OK', http: '200', messages: [1, 1] });
      assert.equal(await connectCode(w2.echo({ failCode: 16 })), 'UNAUTHENTICATED');
      expectCall({ sc: 'main', protocol: 'grpc_web', encoding: 'proto', method: ECHO, code: 'UNAUTHENTICATED', http: '200', messages: [1, 0] });
    };

    const rawGrpcCalls = async (): Promise<void> => {
      // The sidecar passes the header on untouched; connect-node itself rejects it.
      const res = await h2Call(session, grpcHeaders(`/${ECHO}`, { 'grpc-timeout': 'abc' }), protoFrame(EchoService.method.echo.input, { message: 'x' }));
      assert.equal(res.grpcStatus, '3');
      rawInputs.push('abc');
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'INVALID_ARGUMENT', http: '200', messages: [1, 0], deadline: 'invalid' });
    };

    const restCalls = async (): Promise<void> => {
      const rest = (method: string, code: CodeName, http: number): void =>
        expectCall({ sc: 'main', protocol: 'rest', encoding: 'other', method, code, http: String(http) });
      const echoed = await fetch(`${url}/v1/echo/12345?token=s3cr3t-token`);
      assert.equal(echoed.status, 200);
      await echoed.arrayBuffer();
      rawInputs.push('12345', 's3cr3t-token');
      rest('GET /v1/echo/{id}', 'OK', 200);
      const h2 = await h2Call(session, { ':method': 'GET', ':path': '/v1/echo/67890' });
      assert.equal(h2.status, 200);
      rawInputs.push('67890');
      rest('GET /v1/echo/{id}', 'OK', 200);
      // The google.rpc.Code table of docs/metrics.md, one HTTP status each.
      const statuses: [number, CodeName][] = [[404, 'NOT_FOUND'], [503, 'UNAVAILABLE'], [429, 'RESOURCE_EXHAUSTED'], [418, 'FAILED_PRECONDITION'], [502, 'UNKNOWN'], [201, 'OK']];
      await Promise.all(statuses.map(async ([status, code]) => {
        assert.equal((await h1Call(`${url}/v1/status/${status}`)).status, status);
        rest('GET /v1/status/{id}', code, status);
      }));
      const bytes = await fetch(`${url}/v1/bytes?n=3000`);
      assert.equal((await bytes.arrayBuffer()).byteLength, 3000);
      rest('GET /v1/bytes', 'OK', 200);
      const posted = await h1Call(`${url}/v1/echo`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: Buffer.alloc(5000, 1) });
      assert.equal(posted.body.length, 5000);
      rest('POST /v1/echo', 'OK', 200);
      const slow = await fetch(`${url}/v1/slow?ms=300`);
      assert.equal(slow.status, 200);
      await slow.arrayBuffer();
      rest('GET /v1/slow', 'OK', 200);
      // An HTTP/1.1 client that drops its connection mid-call.
      await new Promise<void>((resolve) => {
        const req = http.get(`${url}/v1/slow?ms=3000`, { agent: false });
        req.on('error', () => resolve());
        setTimeout(() => req.destroy(), 150);
      });
      expectCall({ sc: 'main', protocol: 'rest', encoding: 'other', method: 'GET /v1/slow', code: 'CANCELLED', http: '', reset: 'client CONNECTION_CLOSED' });
    };

    await Promise.all([grpcJsCalls(), connectGrpcCalls(), connectCalls(), grpcWebCalls(), rawGrpcCalls(), restCalls()]);
    session.close();
  }

  /** Deadlines missed by the client's own clock and by a late answer, and resets sent by the upstream. */
  async function rawMix(): Promise<void> {
    const gj = await grpcJsEcho(sc.raw.port);
    clients.push(gj);
    const session = http2.connect(sc.raw.url);
    session.on('error', () => {});
    clients.push(session);
    const empty = frame(new Uint8Array(0));
    await Promise.all([
      (async () => {
        // grpc-js resets the stream when its 150 ms deadline passes; the upstream would take RAW_DELAY_MS.
        assert.equal(await grpcJsUnary(gj, { message: 'x' }, { deadlineMs: 150 }), 'DEADLINE_EXCEEDED');
        expectCall({ sc: 'raw', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'DEADLINE_EXCEEDED', http: '', messages: [1, 0], deadline: 'set', detectedBy: 'client_cancel', reset: 'client CANCEL' });
      })(),
      (async () => {
        // A client that sends grpc-timeout but does not enforce it: the answer comes whole, after the deadline.
        const res = await h2Call(session, grpcHeaders(`/${ECHO}`, { 'grpc-timeout': '100m' }), empty);
        assert.deepEqual([res.status, res.grpcStatus, res.rstCode], [200, '0', http2.constants.NGHTTP2_NO_ERROR]);
        expectCall({ sc: 'raw', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'DEADLINE_EXCEEDED', http: '200', messages: [1, 1], deadline: 'set', detectedBy: 'late_response' });
      })(),
      ...([['Internal', NGHTTP2_INTERNAL_ERROR, 'INTERNAL_ERROR', 'INTERNAL'], ['Calm', NGHTTP2_ENHANCE_YOUR_CALM, 'ENHANCE_YOUR_CALM', 'RESOURCE_EXHAUSTED']] as const).map(async ([name, rst, label, code]) => {
        const res = await h2Call(session, grpcHeaders(`/reset.v1.ResetService/${name}`), empty);
        assert.equal(res.rstCode, rst);
        expectCall({ sc: 'raw', protocol: 'grpc', encoding: 'proto', method: `reset.v1.ResetService/${name}`, code, http: '200', messages: [1, 1], reset: `upstream ${label}` });
      }),
    ]);
    gj.close();
    session.close();
  }

  /** One operation over REST and RPC, joined by the google.api.http rules of the .proto files. */
  async function ordersMix(): Promise<void> {
    const url = sc.orders.url;
    const grpcClient = createClient(OrderService, createGrpcTransport({ baseUrl: url }));
    const jsonClient = createClient(OrderService, createConnectTransport({ baseUrl: url, httpVersion: '1.1', useBinaryFormat: false }));
    const rest = 'GET /v1/orders/{id}';
    await Promise.all([
      (async () => {
        assert.equal(await connectCode(grpcClient.getOrder({ id: 'ord-000001' })), 'OK');
        expectCall({ sc: 'orders', protocol: 'grpc', encoding: 'proto', method: GET_ORDER, code: 'OK', http: '200', messages: [1, 1] });
        assert.equal(await connectCode(jsonClient.getOrder({ id: 'ord-000002' }, { headers: { 'x-fail-code': '5' } })), 'NOT_FOUND');
        expectCall({ sc: 'orders', protocol: 'connect', encoding: 'json', method: GET_ORDER, code: 'NOT_FOUND', http: '404' });
      })(),
      (async () => {
        const ok = await fetch(`${url}/v1/orders/ord-000002`);
        assert.equal(ok.status, 200);
        await ok.arrayBuffer();
        expectCall({ sc: 'orders', protocol: 'rest', encoding: 'other', method: rest, operation: GET_ORDER, code: 'OK', http: '200' });
        const missing = await fetch(`${url}/v1/orders/ord-999999`);
        assert.equal(missing.status, 404);
        await missing.arrayBuffer();
        rawInputs.push('ord-000002', 'ord-999999');
        expectCall({ sc: 'orders', protocol: 'rest', encoding: 'other', method: rest, operation: GET_ORDER, code: 'NOT_FOUND', http: '404' });
      })(),
    ]);
  }

  /** The sidecar's own deadline enforcement (--enforce-deadlines), before the answer and during a stream. */
  async function enforceMix(): Promise<void> {
    const session = http2.connect(sc.enforce.url);
    session.on('error', () => {});
    clients.push(session);
    const empty = frame(new Uint8Array(0));
    // Raw clients that do not enforce their own deadline, so the sidecar's enforcement is what ends the call.
    await Promise.all([
      (async () => {
        const res = await h2Call(session, grpcHeaders(`/${ECHO}`, { 'grpc-timeout': '150m' }), empty);
        assert.deepEqual([res.status, res.grpcStatus], [200, '4']);
        expectCall({ sc: 'enforce', protocol: 'grpc', encoding: 'proto', method: ECHO, code: 'DEADLINE_EXCEEDED', http: '200', messages: [1, 0], deadline: 'set', detectedBy: 'proxy' });
      })(),
      (async () => {
        const res = await h2Call(session, { ':method': 'POST', ':path': `/${ECHO}`, 'content-type': 'application/json', 'connect-protocol-version': '1', 'connect-timeout-ms': '150' }, Buffer.from('{}'));
        assert.equal(res.status, 504);
        expectCall({ sc: 'enforce', protocol: 'connect', encoding: 'json', method: ECHO, code: 'DEADLINE_EXCEEDED', http: '504', deadline: 'set', detectedBy: 'proxy' });
      })(),
      (async () => {
        // A stream already answering when its deadline passes: the sidecar resets it toward the caller.
        // The budget leaves the upstream's first messages ample time to arrive on a loaded machine.
        const res = await h2Call(session, grpcHeaders(`/${SERVER_STREAM}`, { 'grpc-timeout': '800m' }), empty);
        assert.deepEqual([res.status, res.rstCode], [200, NGHTTP2_CANCEL]);
        expectCall({ sc: 'enforce', protocol: 'grpc', encoding: 'proto', method: SERVER_STREAM, code: 'DEADLINE_EXCEEDED', http: '200', messages: [1, 2], stream: 'server_streaming', deadline: 'set', detectedBy: 'proxy', reset: 'proxy CANCEL' });
      })(),
    ]);
    session.close();
  }

  /**
   * More distinct unknown gRPC methods and REST routes than --max-methods, in
   * order (the first ones keep their own series), plus REST paths whose ids
   * must fold into one `{id}` template and gRPC paths that are not methods.
   */
  async function flood(): Promise<void> {
    const url = sc.main.url;
    const session = http2.connect(url);
    session.on('error', () => {});
    clients.push(session);
    const admitted = (protocol: Protocol): Set<string> => new Set(ledger.filter((e) => e.sc === 'main' && e.protocol === protocol).map((e) => e.method));
    const grpcSeen = admitted('grpc');
    for (let i = 0; i < FLOOD; i++) {
      const method = `flood.v1.Service${String.fromCharCode(97 + (i % 26))}${Math.floor(i / 26)}/Call`;
      const res = await h2Call(session, grpcHeaders(`/${method}`), frame(new Uint8Array(0)));
      assert.equal(res.status, 404);
      if (grpcSeen.size < MAX_METHODS) grpcSeen.add(method);
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: grpcSeen.has(method) ? method : '_OTHER', code: 'UNIMPLEMENTED', http: '404', messages: [1, 0] });
    }
    for (const path of ['/no-method', '/a/b/c']) {
      assert.equal((await h2Call(session, grpcHeaders(path), frame(new Uint8Array(0)))).status, 404);
      expectCall({ sc: 'main', protocol: 'grpc', encoding: 'proto', method: '_OTHER', code: 'UNIMPLEMENTED', http: '404', messages: [1, 0] });
    }
    const restSeen = admitted('rest');
    const restCall = async (path: string, template: string): Promise<void> => {
      const res = await fetch(`${url}${path}`);
      assert.equal(res.status, 404);
      await res.arrayBuffer();
      if (restSeen.size < MAX_METHODS) restSeen.add(template);
      const method = restSeen.has(template) ? template : '_OTHER';
      expectCall({ sc: 'main', protocol: 'rest', encoding: 'other', method, code: 'NOT_FOUND', http: '404' });
    };
    for (let i = 0; i < FLOOD; i++) {
      const userId = String(100_000 + i * 7919);
      const orderId = crypto.randomUUID();
      rawInputs.push(userId, orderId);
      await restCall(`/v1/users/${userId}/orders/${orderId}`, 'GET /v1/users/{id}/orders/{id}');
    }
    for (let i = 0; i < FLOOD; i++) {
      const itemId = String(900_000 + i);
      rawInputs.push(itemId);
      await restCall(`/v1/flood${i}/items/${itemId}`, `GET /v1/flood${i}/items/{id}`);
    }
    session.close();
  }

  const forSidecar = (name: SidecarName): Expected[] => ledger.filter((e) => e.sc === name);

  /** The exposition of `name` once it has counted every call the script made to it. */
  async function settledScrape(name: SidecarName): Promise<{ text: string; samples: Sample[] }> {
    const want = forSidecar(name).length;
    const until = Date.now() + 5000;
    for (;;) {
      const s = await scrape(sc[name]);
      const got = sum(s.samples, 'rpcscope_calls_total');
      if (got === want || Date.now() > until) {
        assert.equal(got, want, `${name}: calls counted\n${s.text}`);
        return s;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('counts every call on /metrics with the labels the ledger expects, and none in flight', async () => {
    for (const name of Object.keys(sc) as SidecarName[]) {
      const { samples } = await settledScrape(name);
      const calls = sumBy(samples, 'rpcscope_calls_total', ['direction', 'protocol', 'encoding', 'method', 'operation', 'code', 'http_status']);
      const expected = tally(forSidecar(name), (e) => ['inbound', e.protocol, e.encoding, e.method, e.operation ?? e.method, e.code, e.http].join(' | '));
      assert.deepEqual(sortedEntries(calls), sortedEntries(expected), `${name}: rpcscope_calls_total`);
      assert.equal(sum(samples, 'rpcscope_calls_active'), 0, `${name}: calls_active`);
    }
  });

  it('puts payload sizes, a slow call and deadline budgets in their buckets on /metrics', async () => {
    const { samples } = await settledScrape('main');
    const payload = (method: string, flow: string) => ({ protocol: 'rest', method, flow });
    const bucket = (name: string, where: Record<string, string>, le: string): number => sum(samples, `${name}_bucket`, { ...where, le });
    // Body bytes are exact: 5000 posted and echoed back, 3000 generated.
    for (const [method, flow, bytes] of [['POST /v1/echo', 'request', 5000], ['POST /v1/echo', 'response', 5000], ['GET /v1/bytes', 'request', 0], ['GET /v1/bytes', 'response', 3000]] as const) {
      assert.equal(sum(samples, 'rpcscope_call_bytes_total', payload(method, flow)), bytes, `${method} ${flow}`);
    }
    assert.equal(sum(samples, 'rpcscope_payload_bytes_sum', payload('POST /v1/echo', 'request')), 5000);
    assert.equal(sum(samples, 'rpcscope_payload_bytes_sum', payload('POST /v1/echo', 'response')), 5000);
    assert.equal(sum(samples, 'rpcscope_payload_bytes_sum', payload('GET /v1/bytes', 'request')), 0);
    assert.equal(sum(samples, 'rpcscope_payload_bytes_sum', payload('GET /v1/bytes', 'response')), 3000);
    assert.equal(bucket('rpcscope_payload_bytes', payload('GET /v1/bytes', 'response'), '1024'), 0);
    assert.equal(bucket('rpcscope_payload_bytes', payload('GET /v1/bytes', 'response'), '4096'), 1);
    assert.equal(bucket('rpcscope_payload_bytes', payload('POST /v1/echo', 'request'), '4096'), 0);
    assert.equal(bucket('rpcscope_payload_bytes', payload('POST /v1/echo', 'request'), '16384'), 1);
    // The one gRPC call with a payload: 100 bytes in field 2 plus tag, length and the 5-byte envelope,
    // echoed back; every other Echo message is under 64 bytes.
    for (const flow of ['request', 'response']) {
      const grpcEcho = { protocol: 'grpc', method: ECHO, flow };
      assert.equal(bucket('rpcscope_payload_bytes', grpcEcho, '256') - bucket('rpcscope_payload_bytes', grpcEcho, '64'), 1, `gRPC ${flow} of 107 bytes`);
      assert.equal(bucket('rpcscope_payload_bytes', grpcEcho, '+Inf') - bucket('rpcscope_payload_bytes', grpcEcho, '256'), 0);
    }

    // GET /v1/slow?ms=300 lands above 0.25 s; the dropped one is a cancelled call, in its own series.
    const slowOk = { protocol: 'rest', method: 'GET /v1/slow', code: 'OK' };
    assert.equal(sum(samples, 'rpcscope_call_duration_seconds_count', slowOk), 1);
    assert.equal(bucket('rpcscope_call_duration_seconds', slowOk, '0.25'), 0);
    assert.equal(bucket('rpcscope_call_duration_seconds', slowOk, '2.5'), 1);
    assert.equal(sum(samples, 'rpcscope_call_duration_seconds_count', { protocol: 'rest', method: 'GET /v1/slow', code: 'CANCELLED' }), 1);
    // Streams are not unary-shaped: they have no call duration, only a stream duration.
    assert.equal(sum(samples, 'rpcscope_call_duration_seconds_count', { method: SERVER_STREAM }), 0);

    // At the default detail level the same facts are byte counters and a histogram per method.
    const standard = (await settledScrape('orders')).text;
    assert.match(standard, /^rpcscope_call_bytes_total\{/m);
    assert.doesNotMatch(standard, /^rpcscope_payload_bytes/m);
    assert.doesNotMatch(standard, /^rpcscope_call_duration_seconds_\w+\{[^}]*code=/m);
    assert.match(standard, /^rpcscope_call_duration_seconds_bucket\{[^}]*le="2\.5"\} \d+$/m);

    // Budgets of 5 s (grpc-js, connect-node gRPC and Connect), met well inside a quarter of it.
    const withDeadline = forSidecar('main').filter((e) => e.deadline === 'set');
    const byProtocol = tally(withDeadline, (e) => e.protocol);
    assert.deepEqual(sortedEntries(sumBy(samples, 'rpcscope_deadline_requested_seconds_count', ['protocol'])), sortedEntries(byProtocol));
    assert.equal(sum(samples, 'rpcscope_deadline_requested_seconds_bucket', { le: '2.5' }), 0);
    assert.equal(sum(samples, 'rpcscope_deadline_requested_seconds_bucket', { le: '5' }), withDeadline.length);
    assert.equal(sum(samples, 'rpcscope_deadline_used_ratio_bucket', { le: '0.25' }), withDeadline.length);

    // On the raw sidecar both misses used their whole budget, and the late answer (a second
    // for 100 ms) at least ten times it: together at least 1 + 10, however late the client's
    // cancel was seen on a busy machine. The sidecar's clock starts when it reads the call,
    // after the client's did: a miss the client cancels at its deadline may read just under
    // 1 (the relay reads the client's RST_STREAM the moment it arrives), never under 0.9.
    const raw = (await settledScrape('raw')).samples;
    assert.equal(sum(raw, 'rpcscope_deadline_used_ratio_count'), 2);
    assert.equal(sum(raw, 'rpcscope_deadline_used_ratio_bucket', { le: '0.9' }), 0);
    assert.ok(sum(raw, 'rpcscope_deadline_used_ratio_sum') >= 1 + RAW_DELAY_MS / 100, `ratio sum ${sum(raw, 'rpcscope_deadline_used_ratio_sum')}`);
  });

  it('never puts a raw URL, id, query or header value in a label', async () => {
    for (const name of Object.keys(sc) as SidecarName[]) {
      const { samples } = await settledScrape(name);
      for (const s of samples) {
        for (const [label, value] of Object.entries(s.labels)) {
          if (label === 'le' || label === 'upstream') continue;
          assert.ok(!/[?#]|:\/\//.test(value), `${name}: ${s.name}{${label}="${value}"} looks like a URL`);
          for (const input of rawInputs) assert.ok(!value.includes(input), `${name}: ${s.name}{${label}="${value}"} holds the raw input ${input}`);
        }
        const method = s.labels.method;
        if (method === undefined || method === '_OTHER') continue;
        if (s.labels.protocol === 'rest') assert.match(method, /^[A-Z]+ (\/([A-Za-z_][\w.~-]*|\{id\}))+$/, `${name}: REST method label`);
        else assert.match(method, /^[\w.]+\/\w+$/, `${name}: RPC method label`);
      }
    }
  });

  describe('through Prometheus', () => {
    const promValues = async (expr: string, by: readonly string[]): Promise<Record<string, number>> => {
      const out: Record<string, number> = {};
      for (const s of await prom.query(expr)) out[by.map((l) => s.metric[l] ?? '').join(' | ')] = Number(s.value[1]);
      return out;
    };

    before(async () => {
      // Scrapes run every second: wait until every sidecar's latest one holds every call.
      const until = Date.now() + 15_000;
      for (;;) {
        const total = await promValues('sum(rpcscope_calls_total)', []);
        if (total[''] === ledger.length) return;
        if (Date.now() > until) assert.fail(`Prometheus saw ${total[''] ?? 0} calls, the script made ${ledger.length}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    });

    it('sum by (protocol, code) (rpcscope_calls_total)', async () => {
      assert.deepEqual(
        sortedEntries(await promValues('sum by (protocol, code) (rpcscope_calls_total)', ['protocol', 'code'])),
        sortedEntries(tally(ledger, (e) => `${e.protocol} | ${e.code}`)),
      );
    });

    it('rpcscope_protocol_calls_total: the same calls by protocol and code', async () => {
      assert.deepEqual(
        sortedEntries(await promValues('sum by (protocol, code) (rpcscope_protocol_calls_total)', ['protocol', 'code'])),
        sortedEntries(tally(ledger, (e) => `${e.protocol} | ${e.code}`)),
      );
    });

    it('sum by (detected_by) (rpcscope_deadline_exceeded_total): one way of noticing each, and only misses', async () => {
      const got = await promValues('sum by (detected_by) (rpcscope_deadline_exceeded_total)', ['detected_by']);
      assert.deepEqual(sortedEntries(got), sortedEntries(tally(ledger, (e) => e.detectedBy)));
      assert.deepEqual(Object.keys(got).sort(), ['client_cancel', 'late_response', 'proxy', 'status']);
      // Every DEADLINE_EXCEEDED call is one miss, counted once.
      const exceeded = await promValues('sum(rpcscope_calls_total{code="DEADLINE_EXCEEDED"})', []);
      assert.equal(exceeded[''], Object.values(got).reduce((a, b) => a + b, 0));
    });

    it('sum by (side, error_code) (rpcscope_stream_resets_total)', async () => {
      const got = await promValues('sum by (side, error_code) (rpcscope_stream_resets_total)', ['side', 'error_code']);
      assert.deepEqual(sortedEntries(got), sortedEntries(tally(ledger, (e) => e.reset?.replace(' ', ' | '))));
      assert.deepEqual([...new Set(Object.keys(got).map((k) => k.split(' | ')[0]))].sort(), ['client', 'proxy', 'upstream']);
    });

    it('rpcscope_calls_without_deadline_total and rpcscope_deadline_header_invalid_total', async () => {
      const rpc = ledger.filter((e) => e.protocol !== 'rest');
      const without = await promValues('sum(rpcscope_calls_without_deadline_total)', []);
      assert.equal(without[''], rpc.filter((e) => e.deadline !== 'set').length);
      const invalid = await promValues('sum by (protocol) (rpcscope_deadline_header_invalid_total)', ['protocol']);
      assert.deepEqual(sortedEntries(invalid), sortedEntries(tally(ledger, (e) => (e.deadline === 'invalid' ? e.protocol : undefined))));
      assert.deepEqual(Object.keys(invalid).sort(), ['connect', 'grpc']);
    });

    it(`holds method labels to --max-methods (${MAX_METHODS}) per protocol, with _OTHER for the rest`, async () => {
      for (const protocol of ['grpc', 'rest']) {
        const count = await promValues(`count(count by (method) (rpcscope_calls_total{sidecar="main",protocol="${protocol}"}))`, []);
        assert.equal(count[''], MAX_METHODS + 1, `${protocol}: distinct method labels`);
        const other = await promValues(`sum(rpcscope_calls_total{sidecar="main",protocol="${protocol}",method="_OTHER"})`, []);
        assert.equal(other[''], ledger.filter((e) => e.sc === 'main' && e.protocol === protocol && e.method === '_OTHER').length, `${protocol}: calls folded into _OTHER`);
        assert.ok((other[''] ?? 0) > 0);
      }
      // Thirty users' orders, each path with its own ids, are one route.
      const users = await promValues('sum(rpcscope_calls_total{method="GET /v1/users/{id}/orders/{id}"})', []);
      assert.equal(users[''], FLOOD);
    });

    it('joins GET /v1/orders/{id} and order.v1.OrderService/GetOrder under one operation, from google.api.http', async () => {
      const got = await promValues(`sum by (operation, protocol, method) (rpcscope_calls_total{sidecar="orders",operation="${GET_ORDER}"})`, ['protocol', 'method']);
      assert.deepEqual(sortedEntries(got), sortedEntries(tally(forSidecar('orders').filter((e) => (e.operation ?? e.method) === GET_ORDER), (e) => `${e.protocol} | ${e.method}`)));
      assert.deepEqual(Object.keys(got).sort(), [`connect | ${GET_ORDER}`, `grpc | ${GET_ORDER}`, 'rest | GET /v1/orders/{id}']);
    });

    it('sum by (stream_type) (rpcscope_stream_duration_seconds_count)', async () => {
      const got = await promValues('sum by (stream_type) (rpcscope_stream_duration_seconds_count)', ['stream_type']);
      assert.deepEqual(sortedEntries(got), sortedEntries(tally(ledger, (e) => e.stream)));
      assert.deepEqual(Object.keys(got).sort(), ['bidi_streaming', 'client_streaming', 'server_streaming']);
    });

    it('sum by (flow) (rpcscope_messages_total)', async () => {
      const got = await promValues('sum by (flow) (rpcscope_messages_total)', ['flow']);
      const framed = ledger.filter((e) => e.messages !== undefined);
      assert.deepEqual(got, {
        request: framed.reduce((a, e) => a + e.messages![0], 0),
        response: framed.reduce((a, e) => a + e.messages![1], 0),
      });
    });
  });

  it('exits on SIGTERM within --drain-timeout, though Prometheus and keep-alive clients hold connections open', async () => {
    // Last, once every assertion has read what it needs: fetch's pool still holds idle
    // HTTP/1.1 connections to `main` and `orders`, and Prometheus its scrape connections.
    const started = Date.now();
    const codes = await Promise.all(Object.values(sc).map((s) => s.stop()));
    assert.deepEqual(codes, [0, 0, 0, 0]);
    assert.ok(Date.now() - started < 2000 + 1500, `stopped after ${Date.now() - started} ms`);
  });
});
