// Repeated header fields pass through the sidecar as separate fields, in both
// directions, on every HTTP version pair. gRPC metadata may repeat a key
// (PROTOCOL-HTTP2.md, "Custom-Metadata"): a C-core (grpcio) server cannot decode
// binary values joined into one field with ", ", and REST's set-cookie never may
// be joined (RFC 9110 §5.3).
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startGrpcioServer, type ServerProcess } from '../support/server-process.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const BIN_A = Buffer.from([0x00, 0x01]);
const BIN_B = Buffer.from([0xff, 0xfe, 0xfd]);
const raw = (b: Buffer): Buffer => b;

interface Answer {
  err: grpc.ServiceError | null;
  /** The fields the server received, [name, value] (binary values base64). */
  received: [string, string][];
  headers: grpc.Metadata | undefined;
  trailers: grpc.Metadata | undefined;
}

function callWithRepeatedMetadata(address: string): Promise<Answer> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  md.add('x-peer-twice-bin', BIN_A);
  md.add('x-peer-twice-bin', BIN_B);
  md.add('x-peer-twice', 'first');
  md.add('x-peer-twice', 'second');
  return new Promise((resolve) => {
    let headers: grpc.Metadata | undefined;
    let answered: Pick<Answer, 'err' | 'received'> | undefined;
    // grpc-js calls back before it emits 'status', whose metadata are the trailers.
    const call = client.makeUnaryRequest('/test.Echo/Echo', raw, raw, Buffer.from('hi'), md, { deadline: Date.now() + 5000 }, (err, body) => {
      answered = { err, received: body ? (JSON.parse(body.toString()) as [string, string][]) : [] };
    });
    call.on('metadata', (m) => (headers = m));
    call.on('status', (s) => {
      client.close();
      resolve({ ...answered!, headers, trailers: s.metadata });
    });
  });
}

function fieldValues(fields: [string, string][], name: string): string[] {
  return fields.filter(([k]) => k === name).map(([, v]) => v);
}

/** The raw header and trailer fields an HTTP/2 client saw, [name, value, ...]. */
function h2Raw(origin: string, path: string, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<{ status: number; raw: string[]; trailers: string[]; text: string }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(origin);
    session.on('error', reject);
    const req = session.request({ ':method': body ? 'POST' : 'GET', ':path': path, ...headers }, { endStream: !body });
    let raw: string[] = [];
    let trailers: string[] = [];
    let text = '';
    req.on('response', (_h: http2.IncomingHttpHeaders, _flags: number, r?: string[]) => (raw = r ?? []));
    req.on('trailers', (_t: http2.IncomingHttpHeaders, _flags: number, r?: string[]) => (trailers = r ?? []));
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('error', reject);
    req.on('close', () => {
      session.close();
      resolve({ status: Number(raw[raw.indexOf(':status') + 1]), raw, trailers, text });
    });
    if (body) req.end(body);
  });
}

function pairs(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === name) out.push(raw[i + 1]!);
  return out;
}

describe('repeated gRPC metadata keys, grpc-js client to a C-core (grpcio) server', () => {
  let server: ServerProcess;
  let sc: TestSidecar;

  before(async () => {
    server = await startGrpcioServer();
    sc = await startTestSidecar(server.url);
  });
  after(async () => {
    await sc.stop();
    await server.kill();
  });

  it('reach the server as separate fields', async () => {
    const a = await callWithRepeatedMetadata(`127.0.0.1:${sc.port}`);
    assert.equal(a.err, null, a.err?.details);
    assert.deepEqual(fieldValues(a.received, 'x-peer-twice-bin'), [BIN_A.toString('base64'), BIN_B.toString('base64')]);
    assert.deepEqual(fieldValues(a.received, 'x-peer-twice'), ['first', 'second']);
  });

  it('come back in response headers and trailers as a direct call gets them', async () => {
    const direct = await callWithRepeatedMetadata(`127.0.0.1:${server.port}`);
    const proxied = await callWithRepeatedMetadata(`127.0.0.1:${sc.port}`);
    assert.equal(proxied.err, null, proxied.err?.details);
    for (const key of ['x-peer-twice-bin', 'x-peer-twice']) {
      assert.deepEqual(proxied.headers?.get(key), direct.headers?.get(key), `headers ${key}`);
      assert.deepEqual(proxied.trailers?.get(key), direct.trailers?.get(key), `trailers ${key}`);
    }
    assert.deepEqual(proxied.headers?.get('x-peer-twice-bin'), [BIN_A, BIN_B]);
    assert.deepEqual(proxied.trailers?.get('x-peer-twice-bin'), [BIN_A, BIN_B]);
  });

  it('come back as separate HTTP/2 fields', async () => {
    const frame = Buffer.from([0, 0, 0, 0, 2, 0x68, 0x69]);
    const r = await h2Raw(sc.url, '/test.Echo/Echo', { 'content-type': 'application/grpc', te: 'trailers', 'x-peer-twice': ['first', 'second'] }, frame);
    assert.deepEqual(pairs(r.raw, 'x-peer-twice'), ['first', 'second']);
    assert.deepEqual(pairs(r.trailers, 'x-peer-twice'), ['first', 'second']);
    assert.deepEqual(pairs(r.trailers, 'grpc-status'), ['0']);
  });
});

// A REST app that answers with the request's fields as it received them, plus
// repeated response fields of its own, over HTTP/1.1 or HTTP/2.
function restHandler(rawHeaders: string[], respond: (fields: [string, string][], body: string) => void): void {
  const fields: [string, string][] = [];
  for (let i = 0; i < rawHeaders.length; i += 2) fields.push([rawHeaders[i]!.toLowerCase(), rawHeaders[i + 1]!]);
  respond(
    [
      ['set-cookie', 'a=1; Path=/'],
      ['set-cookie', 'b=2; Path=/'],
      ['x-custom', 'one'],
      ['x-custom', 'two'],
    ],
    JSON.stringify(fields),
  );
}

async function startRestApp(version: '1.1' | '2'): Promise<{ url: string; close(): Promise<void> }> {
  let server: http.Server | http2.Http2Server;
  if (version === '1.1') {
    server = http.createServer((req, res) => {
      req.resume();
      restHandler(req.rawHeaders, (fields, body) => {
        const out: string[] = [];
        for (const [k, v] of fields) out.push(k, v);
        res.writeHead(200, [...out, 'content-type', 'application/json']);
        res.addTrailers([
          ['x-trailer', 'p'],
          ['x-trailer', 'q'],
        ]);
        res.end(body);
      });
    });
  } else {
    const h2 = http2.createServer();
    h2.on('stream', (stream: http2.ServerHttp2Stream, _headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders?: string[]) => {
      stream.resume();
      restHandler(rawHeaders ?? [], (fields, body) => {
        const out: http2.OutgoingHttpHeaders = { ':status': 200, 'content-type': 'application/json' };
        for (const [k, v] of fields) out[k] = [...((out[k] as string[] | undefined) ?? []), v];
        stream.respond(out, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'x-trailer': ['p', 'q'] }));
        stream.end(body);
      });
    });
    server = h2;
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

function h1Raw(url: string, headers: http.OutgoingHttpHeaders): Promise<{ raw: string[]; trailers: string[]; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'GET', headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ raw: res.rawHeaders, trailers: res.rawTrailers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

for (const appVersion of ['1.1', '2'] as const) {
  describe(`repeated REST fields through the sidecar to an HTTP/${appVersion} app`, () => {
    let app: Awaited<ReturnType<typeof startRestApp>>;
    let sc: TestSidecar;
    before(async () => {
      app = await startRestApp(appVersion);
      sc = await startTestSidecar(app.url, ['--upstream-protocol', appVersion === '2' ? 'http2' : 'http1']);
    });
    after(async () => {
      await sc.stop();
      await app.close();
    });

    it('from an HTTP/1.1 caller', async () => {
      const r = await h1Raw(`${sc.url}/v1/cookies`, { 'x-custom-req': ['one', 'two'] });
      const fields = JSON.parse(r.text) as [string, string][];
      assert.deepEqual(fieldValues(fields, 'x-custom-req'), ['one', 'two']);
      assert.deepEqual(pairs(r.raw, 'set-cookie'), ['a=1; Path=/', 'b=2; Path=/']);
      assert.deepEqual(pairs(r.raw, 'x-custom'), ['one', 'two']);
      assert.deepEqual(pairs(r.trailers, 'x-trailer'), ['p', 'q']);
    });

    it('from an HTTP/2 caller', async () => {
      const r = await h2Raw(sc.url, '/v1/cookies', { 'x-custom-req': ['one', 'two'] });
      assert.equal(r.status, 200);
      const fields = JSON.parse(r.text) as [string, string][];
      assert.deepEqual(fieldValues(fields, 'x-custom-req'), ['one', 'two']);
      assert.deepEqual(pairs(r.raw, 'set-cookie'), ['a=1; Path=/', 'b=2; Path=/']);
      assert.deepEqual(pairs(r.raw, 'x-custom'), ['one', 'two']);
      assert.deepEqual(pairs(r.trailers, 'x-trailer'), ['p', 'q']);
    });
  });
}
