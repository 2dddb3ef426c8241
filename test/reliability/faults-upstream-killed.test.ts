// Fault: the app behind the real `sidecar/bin/rpcscope` is killed (SIGKILL) in
// the middle of a server stream, then restarted. The client must read the loss
// as UNAVAILABLE from the server side — never CANCELLED, its own act — in the
// framing of its protocol; /metrics counts it UNAVAILABLE with the upstream's
// connection closed; and the next call, once the app is back, succeeds.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startGrpcioServer, startStreamForever, type ServerProcess } from '../../sidecar/test/support/server-process.ts';
import { parseExposition, sum } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const raw = (b: Buffer): Buffer => b;
const MESSAGES_BEFORE_KILL = 3;

async function metrics(sc: SidecarProcess): Promise<ReturnType<typeof parseExposition>> {
  return parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
}

/** A grpc-js server stream; `onMessage(n)` runs at each message. */
function serverStream(address: string, onMessage: (n: number) => void): Promise<{ messages: number; err: grpc.ServiceError | null }> {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    let messages = 0;
    const call = client.makeServerStreamRequest('/test.Echo/Stream', raw, raw, Buffer.from('go'));
    call.on('data', () => onMessage(++messages));
    call.on('error', (err: grpc.ServiceError) => {
      client.close();
      resolve({ messages, err });
    });
    call.on('end', () => {
      client.close();
      resolve({ messages, err: null });
    });
  });
}

/** A gRPC-Web or Connect server stream over HTTP/2: the body, whole, and how the stream ended. */
function framedStream(origin: string, contentType: string, onData: (bytes: number) => void): Promise<{ body: Buffer; rstCode: number | undefined }> {
  return new Promise((resolve) => {
    const session = http2.connect(origin);
    session.on('error', () => {});
    const req = session.request({ ':method': 'POST', ':path': '/test.Echo/Stream', 'content-type': contentType });
    req.on('error', () => {});
    req.end(Buffer.from([0, 0, 0, 0, 2, 0x67, 0x6f]));
    const chunks: Buffer[] = [];
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      chunks.push(c);
      bytes += c.length;
      onData(bytes);
    });
    req.on('close', () => {
      session.close();
      resolve({ body: Buffer.concat(chunks), rstCode: req.rstCode });
    });
  });
}

describe('an upstream killed mid-stream and restarted, behind the real binary', () => {
  let server: ServerProcess;
  let port: number;
  let sc: SidecarProcess;

  before(async () => {
    server = await startGrpcioServer(['--stream', '100']);
    port = server.port;
    sc = await startSidecarProcess(['--upstream', server.url, '--log-level', 'info']);
  });
  after(async () => {
    await sc.stop();
    await server.kill();
  });

  it('a grpc-js client reads UNAVAILABLE, /metrics counts it, and the next call after the restart succeeds', async () => {
    const killed = serverStream(`127.0.0.1:${sc.port}`, (n) => {
      if (n === MESSAGES_BEFORE_KILL) void server.kill('SIGKILL');
    });
    const { messages, err } = await killed;
    assert.ok(messages >= MESSAGES_BEFORE_KILL);
    assert.equal(err?.code, grpc.status.UNAVAILABLE, `${err?.code} ${err?.details}`);
    assert.equal(err?.details, 'upstream connection lost');

    const m = await metrics(sc);
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc', code: 'UNAVAILABLE' }), 1);
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc', code: 'CANCELLED' }), 0);
    assert.equal(sum(m, 'rpcscope_stream_resets_total', { side: 'upstream', error_code: 'CONNECTION_CLOSED' }), 1);
    assert.equal(sum(m, 'rpcscope_stream_resets_total', { side: 'client' }), 0);

    server = await startGrpcioServer(['--stream', '3', '--port', String(port)]);
    const next = await serverStream(`127.0.0.1:${sc.port}`, () => {});
    assert.equal(next.err, null, next.err?.details);
    assert.equal(next.messages, 3);
  });

});

describe('an HTTP/2 app killed mid-stream behind the real binary, gRPC-Web and Connect callers', () => {
  let app: ServerProcess;
  let sc: SidecarProcess;

  before(async () => {
    app = await startStreamForever();
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http2', '--log-level', 'info']);
  });
  after(async () => {
    await sc.stop();
    await app.kill();
  });

  /** Streams until three messages (12 bytes each) arrived, kills the app, and restarts it on its port. */
  async function killMidStream(contentType: string): Promise<{ body: Buffer; rstCode: number | undefined }> {
    const victim = app;
    const r = await framedStream(sc.url, contentType, (bytes) => {
      if (bytes >= 36) void victim.kill('SIGKILL');
    });
    app = await startStreamForever(['--port', String(victim.port)]);
    return r;
  }

  it('gRPC-Web ends with a trailer frame carrying grpc-status 14, not a reset', async () => {
    const r = await killMidStream('application/grpc-web+proto');
    assert.equal(r.rstCode, http2.constants.NGHTTP2_NO_ERROR);
    const text = r.body.toString('latin1');
    const at = text.lastIndexOf('grpc-status:');
    assert.ok(at > 0, 'a trailer frame ends the body');
    assert.equal(r.body[at - 5], 0x80);
    assert.equal(text.slice(at), 'grpc-status:14\r\ngrpc-message:upstream connection lost\r\n');
    const m = await metrics(sc);
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc_web', code: 'UNAVAILABLE' }), 1);
  });

  it('Connect streaming ends with an end-stream message carrying an unavailable error', async () => {
    const r = await killMidStream('application/connect+json');
    assert.equal(r.rstCode, http2.constants.NGHTTP2_NO_ERROR);
    const text = r.body.toString('latin1');
    const at = text.lastIndexOf('{"error"');
    assert.ok(at > 0, 'an end-stream message ends the body');
    assert.equal(r.body[at - 5], 0x02);
    assert.deepEqual(JSON.parse(text.slice(at)), { error: { code: 'unavailable', message: 'upstream connection lost' } });
    const m = await metrics(sc);
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'connect', code: 'UNAVAILABLE' }), 1);
  });

  it('REST is aborted with RST_STREAM(INTERNAL_ERROR), never read as whole', async () => {
    const r = await killMidStream('application/octet-stream');
    assert.equal(r.rstCode, http2.constants.NGHTTP2_INTERNAL_ERROR);
    const m = await metrics(sc);
    assert.equal(sum(m, 'rpcscope_stream_resets_total', { protocol: 'rest', side: 'upstream', error_code: 'CONNECTION_CLOSED' }), 1);
  });
});

/** A gRPC-Web stream over HTTP/1.1: the body as received, and whether it ended whole (not cut). */
function h1FramedStream(url: string, onData: (bytes: number) => void): Promise<{ body: Buffer; complete: boolean }> {
  return new Promise((resolve) => {
    const req = http.request(`${url}/test.Echo/Stream`, { method: 'POST', headers: { 'content-type': 'application/grpc-web+proto' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        bytes += c.length;
        onData(bytes);
      });
      res.on('error', () => {});
      res.on('close', () => resolve({ body: Buffer.concat(chunks), complete: res.complete }));
    });
    req.on('error', () => resolve({ body: Buffer.alloc(0), complete: false }));
    req.end(Buffer.from([0, 0, 0, 0, 2, 0x67, 0x6f]));
  });
}

for (const appVersion of ['1.1', '2'] as const) {
  describe(`an HTTP/${appVersion} app killed mid-stream behind the real binary, a gRPC-Web caller over HTTP/1.1`, () => {
    let app: ServerProcess;
    let sc: SidecarProcess;
    const appArgs = appVersion === '1.1' ? ['--http1'] : [];

    before(async () => {
      app = await startStreamForever(appArgs);
      sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', appVersion === '1.1' ? 'http1' : 'http2', '--log-level', 'info']);
    });
    after(async () => {
      await sc.stop();
      await app.kill();
    });

    it('ends the body with a trailer frame carrying grpc-status 14', async () => {
      const victim = app;
      const r = await h1FramedStream(sc.url, (bytes) => {
        if (bytes >= 36) void victim.kill('SIGKILL');
      });
      assert.equal(r.complete, true);
      const text = r.body.toString('latin1');
      const at = text.lastIndexOf('grpc-status:');
      assert.ok(at > 0, 'a trailer frame ends the body');
      assert.equal(r.body[at - 5], 0x80);
      assert.equal(text.slice(at), 'grpc-status:14\r\ngrpc-message:upstream connection lost\r\n');
      const m = await metrics(sc);
      assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc_web', code: 'UNAVAILABLE' }), 1);
      assert.equal(sum(m, 'rpcscope_stream_resets_total', { side: 'upstream', error_code: 'CONNECTION_CLOSED' }), 1);
    });
  });
}
