// Clients that hold a connection and do nothing with it, against the real
// `sidecar/bin/rpcscope` with short timeouts: 200 connections that never send a
// byte and 20 slowloris clients (a request head one byte every 500 ms) are all
// closed soon after their timeout and counted, while a normal client's gRPC and
// REST calls keep succeeding; idle HTTP/1.1 and HTTP/2 connections are closed
// after --idle-timeout, but a gRPC server stream that is quiet for longer than
// that is not: a call in flight is never idle.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { rawConnect, terminated, type RawClient } from '../support/raw-client.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const FIRST_BYTE_MS = 1000;
const HEADERS_MS = 2000;
const IDLE_MS = 3000;
/** Closing may lag a timeout by the sweep (a quarter of it) and a loaded machine's scheduling. */
const SLACK_MS = 1500;
const SILENT = 200;
const SLOWLORIS = 20;

interface Echo extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

function unary(client: Echo, message: string): Promise<string> {
  return new Promise((resolve, reject) => client.Echo({ message }, (err, res) => (err ? reject(err) : resolve(res!.message))));
}

function serverStream(client: Echo, req: Partial<EchoRequestObject>): Promise<{ messages: number; code: number }> {
  return new Promise((resolve) => {
    let messages = 0;
    const call = client.ServerStream(req);
    call.on('data', () => messages++);
    call.on('error', (err: grpc.ServiceError) => resolve({ messages, code: err.code }));
    call.on('end', () => resolve({ messages, code: 0 }));
  });
}

/** A slowloris: a request line and Host at once, then one more header byte every 500 ms, never the blank line. */
function slowloris(c: RawClient): void {
  c.socket.write('GET /slow HTTP/1.1\r\nhost: x\r\nx-slow: ');
  const drip = setInterval(() => (c.closedAt === undefined ? c.socket.write('a') : clearInterval(drip)), 500);
  void c.closed.then(() => clearInterval(drip));
}

async function closedWithin(clients: RawClient[], ms: number, what: string): Promise<void> {
  await Promise.race([Promise.all(clients.map((c) => c.closed)), new Promise((r) => setTimeout(r, ms + 2 * SLACK_MS))]);
  const open = clients.filter((c) => c.closedAt === undefined).length;
  assert.equal(open, 0, `${open} of ${clients.length} ${what} still open ${ms + 2 * SLACK_MS} ms on`);
  const late = clients.map((c) => c.closedAt! - c.openedAt).filter((held) => held > ms + SLACK_MS);
  assert.deepEqual(late, [], `${what} held longer than ${ms} ms + ${SLACK_MS} ms`);
  const early = clients.map((c) => c.closedAt! - c.openedAt).filter((held) => held < ms - 50);
  assert.deepEqual(early, [], `${what} closed before their ${ms} ms`);
}

describe('rpcscope binary and clients that hold connections idle', () => {
  let upstream: Upstream;
  let sc: SidecarProcess;
  let client: Echo;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startSidecarProcess([
      '--upstream', upstream.url,
      '--first-byte-timeout', `${FIRST_BYTE_MS}ms`,
      '--request-headers-timeout', `${HEADERS_MS}ms`,
      '--idle-timeout', `${IDLE_MS}ms`,
    ]);
    client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Echo;
  });
  after(async () => {
    client.close();
    await sc.stop();
    await upstream.close();
  });

  it(`closes ${SILENT} silent connections and ${SLOWLORIS} slowloris clients after their timeouts while serving a normal client`, async () => {
    const silent = await Promise.all(Array.from({ length: SILENT }, () => rawConnect(sc.port)));
    const slow = await Promise.all(Array.from({ length: SLOWLORIS }, () => rawConnect(sc.port)));
    slow.forEach(slowloris);

    let stop = false;
    let calls = 0;
    const normal = (async () => {
      while (!stop) {
        assert.equal(await unary(client, `n${calls}`), `n${calls}`);
        const rest = await fetch(`${sc.url}/v1/echo/n${calls}`);
        assert.equal(rest.status, 200, `REST call ${calls}`);
        await rest.text();
        calls++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    await closedWithin(silent, FIRST_BYTE_MS, 'silent connections');
    await closedWithin(slow, HEADERS_MS, 'slowloris clients');
    stop = true;
    await normal;

    for (const c of slow) assert.match(c.received().toString('latin1'), /^HTTP\/1\.1 408 /, 'a slowloris is told 408 Request Timeout');
    assert.ok(calls >= 10, `the normal client made ${calls} rounds of calls meanwhile`);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
    assert.equal(await terminated(sc.adminUrl, 'first_byte_timeout'), SILENT);
    assert.equal(await terminated(sc.adminUrl, 'request_headers_timeout'), SLOWLORIS);
  });

  it('closes idle HTTP/1.1 and HTTP/2 connections after --idle-timeout, but not one with a quiet server stream in flight', async () => {
    const idleBefore = await terminated(sc.adminUrl, 'idle_timeout');
    // A server stream whose messages are further apart than the idle timeout, on a connection of its own.
    const streamer = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as Echo;
    const stream = serverStream(streamer, { message: 'long', responses: 2, delayMs: IDLE_MS + 1500 });

    const h1 = await rawConnect(sc.port);
    h1.socket.write('GET /v1/echo/once HTTP/1.1\r\nhost: x\r\n\r\n');
    const h2 = http2.connect(sc.url);
    h2.on('error', () => {});
    let goaway: number | undefined;
    h2.on('goaway', (code) => (goaway = code));
    const h2Closed = new Promise<number>((resolve) => h2.once('close', () => resolve(Date.now())));
    const h2Opened = Date.now();
    await new Promise<void>((resolve, reject) => {
      const req = h2.request({ ':path': '/v1/echo/once' });
      req.on('error', reject);
      req.on('close', () => resolve());
      req.resume();
    });

    await closedWithin([h1], IDLE_MS, 'idle HTTP/1.1 connections');
    assert.match(h1.received().toString('latin1'), /^HTTP\/1\.1 200 /, 'the keep-alive call itself was answered');
    const h2Held = (await h2Closed) - h2Opened;
    assert.ok(h2Held >= IDLE_MS && h2Held <= IDLE_MS + SLACK_MS, `idle HTTP/2 connection closed after ${h2Held} ms`);
    assert.equal(goaway, http2.constants.NGHTTP2_NO_ERROR, 'an idle HTTP/2 client is told GOAWAY NO_ERROR first');

    const { messages, code } = await stream;
    streamer.close();
    assert.deepEqual({ messages, code }, { messages: 2, code: 0 }, 'the quiet server stream completed');
    // At least these two; the normal client's connections from before may have idled out too.
    assert.ok((await terminated(sc.adminUrl, 'idle_timeout')) >= idleBefore + 2);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
  });
});
