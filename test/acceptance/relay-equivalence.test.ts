// The two data planes side by side: the same scripted calls through a sidecar
// that terminates HTTP/2 and one that relays its frames (--data-plane relay),
// in front of the same upstream, must leave the same rpcscope_* series on
// /metrics; again with tracing on, where the relay writes request header
// blocks anew (translate mode); and an outbound sidecar's balanced relay
// (--outbound-data-plane relay) against node:http2. Then real HTTP/2 clients through the relay:
// nghttp and h2load. And the same for HTTP/1.1 callers on the HTTP/1.1 relay
// (--http1-data-plane) and node:http.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import * as grpc from '@grpc/grpc-js';
import { EchoService, GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { eventually } from '../support/eventually.ts';
import { parseExposition, type Sample } from '../support/metrics-text.ts';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

interface Client extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>, opts?: grpc.CallOptions): grpc.ClientReadableStream<EchoResponseObject>;
}

function unary(client: Client, req: Partial<EchoRequestObject>, opts: grpc.CallOptions = {}): Promise<grpc.ServiceError | null> {
  return new Promise((resolve) => client.Echo(req, opts, (err) => resolve(err)));
}

function drainStream(stream: grpc.ClientReadableStream<EchoResponseObject>, cancelAfter?: number): Promise<{ messages: number; code: number }> {
  return new Promise((resolve) => {
    let messages = 0;
    stream.on('data', () => {
      messages++;
      if (messages === cancelAfter) stream.cancel();
    });
    stream.on('error', (err: grpc.ServiceError) => resolve({ messages, code: err.code }));
    stream.on('end', () => resolve({ messages, code: 0 }));
  });
}

/** Runs a program to its end without blocking this process, where the upstreams live. */
function run(cmd: string, args: string[], timeoutMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

async function scrape(sc: SidecarProcess): Promise<Sample[]> {
  return parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
}

/**
 * The series both planes must agree on: counts of calls, messages, payload sizes
 * (count and sum), resets, deadlines, streams and unary calls — everything but
 * times, connections, GOAWAYs (connection events: the terminating path pools its
 * upstream connections, the relay has one per client connection) and the process.
 */
const COMPARED = /^rpcscope_(calls_total|messages_total|stream_resets_total|payload_bytes_(count|sum)|deadline_requested_seconds_count|deadline_used_ratio_count|deadline_exceeded_total|calls_without_deadline_total|deadline_header_invalid_total|call_duration_seconds_count|stream_duration_seconds_count|stream_first_message_seconds_count|upstream_calls_total|calls_active|internal_errors_total|connections_terminated_total)$/;

function compared(samples: Sample[]): string[] {
  return samples
    .filter((s) => COMPARED.test(s.name))
    .map((s) => `${s.name}{${Object.entries(s.labels).sort().map(([k, v]) => `${k}="${v}"`).join(',')}} ${s.value}`)
    .sort();
}

/** The script: each kind of call once, from real clients. */
async function runScript(sc: SidecarProcess): Promise<void> {
  const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()) as unknown as Client;
  try {
    assert.equal(await unary(client, { message: 'ok', responseSize: 256 }), null);
    assert.equal((await unary(client, { message: 'no', failCode: grpc.status.NOT_FOUND }))?.code, grpc.status.NOT_FOUND);
    assert.deepEqual(await drainStream(client.ServerStream({ message: 's', responses: 7, responseSize: 100 })), { messages: 7, code: 0 });
    const cancelled = await drainStream(client.ServerStream({ message: 'c', responses: 1000, delayMs: 300 }), 2);
    assert.equal(cancelled.code, grpc.status.CANCELLED);
    assert.equal(await unary(client, { message: 'deadline' }, { deadline: Date.now() + 10_000 }), null);
  } finally {
    client.close();
  }
  const connect = createClient(EchoService, createConnectTransport({ baseUrl: sc.url, httpVersion: '2', useBinaryFormat: false }));
  assert.equal((await connect.echo({ message: 'connect', responseSize: 10 }, { timeoutMs: 10_000 })).message, 'connect');
  const session = http2.connect(sc.url);
  try {
    // REST, and a tRPC query (read as tRPC by its --trpc-prefix path on both planes),
    // each with the one status it gets: the echo upstream serves no tRPC router, so
    // the query is answered 404 — a tRPC call that fails, the same way on both planes.
    for (const [method, path, body, expected] of [['GET', '/v1/echo/42', undefined, 200], ['POST', '/v1/echo', '{"message":"rest"}', 200], ['GET', '/trpc/greeting.hello?input=%7B%7D', undefined, 404]] as const) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ':method': method, ':path': path, ...(body ? { 'content-type': 'application/json' } : {}) }, { endStream: !body });
        let s = 0;
        req.on('response', (h) => (s = Number(h[':status'])));
        req.on('error', reject);
        req.on('close', () => resolve(s));
        req.resume();
        if (body) req.end(body);
      });
      assert.equal(status, expected, `${method} ${path}`);
    }
  } finally {
    session.close();
  }
}

for (const tracing of [false, true]) describe(`the relay and the terminating path observe the same calls${tracing ? ', tracing on' : ''}`, () => {
  let upstream: Upstream;
  let receiver: OtlpReceiver | undefined;
  let terminate: SidecarProcess;
  let relay: SidecarProcess;
  before(async () => {
    upstream = await startConnectEcho();
    receiver = tracing ? await startOtlpReceiver() : undefined;
    const env: Record<string, string> = receiver ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' } : {};
    terminate = await startSidecarProcess(['--upstream', upstream.url, '--data-plane', 'terminate'], env);
    relay = await startSidecarProcess(['--upstream', upstream.url, '--data-plane', 'relay'], env);
  });
  after(async () => {
    await terminate.stop();
    await relay.stop();
    await upstream.close();
    await receiver?.close();
  });

  it('scrapes equal rpcscope_* series after the same script', async () => {
    for (const sc of [terminate, relay]) {
      await runScript(sc);
      // The cancelled stream ends at the sidecar a moment after the client has moved on.
      await eventually(async () => (await scrape(sc)).filter((s) => s.name === 'rpcscope_calls_active').every((s) => s.value === 0), 'no call in flight', 5000);
    }
    const [t, r] = [compared(await scrape(terminate)), compared(await scrape(relay))];
    assert.ok(t.some((line) => line.startsWith('rpcscope_calls_total') && line.includes('code="CANCELLED"')), 'the script cancels a call');
    assert.ok(t.some((line) => line.startsWith('rpcscope_calls_total') && line.includes('protocol="trpc"')), 'the script makes a tRPC call');
    // The relay really carried them: one upstream connection for each HTTP/2 client connection.
    const opened = (samples: Sample[], side: string): number =>
      samples.filter((x) => (x.name === 'rpcscope_connections_active' || x.name === 'rpcscope_connection_duration_seconds_count') && x.labels.side === side && x.labels.http_version === '2').reduce((n, x) => n + x.value, 0);
    const relayed = await scrape(relay);
    assert.ok(opened(relayed, 'downstream') >= 3);
    assert.equal(opened(relayed, 'upstream'), opened(relayed, 'downstream'));
    assert.deepEqual(r.filter((line) => !t.includes(line)), [], 'only through the relay');
    assert.deepEqual(t.filter((line) => !r.includes(line)), [], 'only through the terminating path');
  });
});

for (const tracing of [false, true]) describe(`outbound: the balanced relay and the terminating path observe the same calls${tracing ? ', tracing on' : ''}`, () => {
  const pods: Upstream[] = [];
  let receiver: OtlpReceiver | undefined;
  let terminate: SidecarProcess;
  let balanced: SidecarProcess;
  before(async () => {
    for (const host of ['127.0.0.2', '127.0.0.3', '127.0.0.4']) pods.push(await startConnectEcho({ host }));
    receiver = tracing ? await startOtlpReceiver() : undefined;
    const env: Record<string, string> = receiver ? { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' } : {};
    const args = ['--mode', 'outbound', '--upstream', pods[0]!.url, '--endpoints', pods.map((p) => `${p.host}:${p.port}`).join(','), '--balance', 'round_robin'];
    terminate = await startSidecarProcess([...args, '--outbound-data-plane', 'terminate'], env);
    balanced = await startSidecarProcess([...args, '--outbound-data-plane', 'relay'], env);
  });
  after(async () => {
    await terminate.stop();
    await balanced.stop();
    await Promise.all(pods.map((p) => p.close()));
    await receiver?.close();
  });

  it('scrapes equal rpcscope_* series after the same script, each endpoint its same calls', async () => {
    for (const sc of [terminate, balanced]) {
      await runScript(sc);
      await eventually(async () => (await scrape(sc)).filter((s) => s.name === 'rpcscope_calls_active').every((s) => s.value === 0), 'no call in flight', 5000);
    }
    const [t, b] = [compared(await scrape(terminate)), compared(await scrape(balanced))];
    assert.ok(t.some((line) => line.startsWith('rpcscope_calls_total') && line.includes('code="CANCELLED"')), 'the script cancels a call');
    // Round robin over three endpoints: each took calls, the same ones on both planes.
    const endpointsUsed = new Set(t.filter((line) => line.startsWith('rpcscope_upstream_calls_total')).map((line) => /upstream="([^"]+)"/.exec(line)?.[1]));
    assert.equal(endpointsUsed.size, 3, t.filter((line) => line.startsWith('rpcscope_upstream_calls_total')).join('\n'));
    assert.deepEqual(b.filter((line) => !t.includes(line)), [], 'only through the balanced relay');
    assert.deepEqual(t.filter((line) => !b.includes(line)), [], 'only through the terminating path');
  });
});

/** The HTTP/1.1 script: each kind of call an HTTP/1.1 caller makes once, from real clients. */
async function runH1Script(sc: SidecarProcess): Promise<void> {
  for (const transport of [createConnectTransport({ baseUrl: sc.url, httpVersion: '1.1', useBinaryFormat: true }), createGrpcWebTransport({ baseUrl: sc.url, httpVersion: '1.1' })]) {
    const echo = createClient(EchoService, transport);
    assert.equal((await echo.echo({ message: 'h1', responseSize: 64 }, { timeoutMs: 10_000 })).message, 'h1');
    await assert.rejects(echo.echo({ message: 'no', failCode: 5 }), (err: ConnectError) => err.code === Code.NotFound);
    let messages = 0;
    for await (const _ of echo.serverStream({ message: 's', responses: 5, responseSize: 100 })) messages++;
    assert.equal(messages, 5);
    // A stream the caller gives up after two messages: cancelled on both planes.
    const abort = new AbortController();
    let seen = 0;
    await assert.rejects(async () => {
      for await (const _ of echo.serverStream({ message: 'c', responses: 1000, delayMs: 300 }, { signal: abort.signal })) if (++seen === 2) abort.abort();
    });
  }
  // REST and a tRPC query (answered 404: the echo upstream serves no tRPC router), on one keep-alive connection.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (const [method, path, body, expected] of [['GET', '/v1/echo/42', undefined, 200], ['POST', '/v1/echo', '{"message":"rest"}', 200], ['GET', '/trpc/greeting.hello?input=%7B%7D', undefined, 404]] as const) {
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${sc.url}${path}`, { method, agent, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
      assert.equal(status, expected, `${method} ${path}`);
    }
  } finally {
    agent.destroy();
  }
}

describe('the HTTP/1.1 relay and the terminating path observe the same calls', () => {
  let upstream: Upstream;
  let terminate: SidecarProcess;
  let relay: SidecarProcess;
  before(async () => {
    upstream = await startConnectEcho();
    // The app spoken to over HTTP/1.1: the relay passes each HTTP/1.1 caller's bytes on.
    terminate = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http1', '--http1-data-plane', 'terminate']);
    relay = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http1', '--http1-data-plane', 'relay']);
  });
  after(async () => {
    await terminate.stop();
    await relay.stop();
    await upstream.close();
  });

  it('scrapes equal rpcscope_* series after the same HTTP/1.1 script (Connect, gRPC-Web, REST, tRPC)', async () => {
    for (const sc of [terminate, relay]) {
      await runH1Script(sc);
      await eventually(async () => (await scrape(sc)).filter((s) => s.name === 'rpcscope_calls_active').every((s) => s.value === 0), 'no call in flight', 5000);
    }
    const [t, r] = [compared(await scrape(terminate)), compared(await scrape(relay))];
    for (const protocol of ['connect', 'grpc_web', 'rest', 'trpc']) assert.ok(t.some((line) => line.startsWith('rpcscope_calls_total') && line.includes(`protocol="${protocol}"`)), `the script makes ${protocol} calls`);
    assert.ok(t.some((line) => line.startsWith('rpcscope_calls_total') && line.includes('code="CANCELLED"')), 'the script cancels a call');
    assert.deepEqual(r.filter((line) => !t.includes(line)), [], 'only through the relay');
    assert.deepEqual(t.filter((line) => !r.includes(line)), [], 'only through the terminating path');
  });
});

describe('real HTTP/2 clients through the relay', () => {
  let upstream: Upstream;
  let grpcUpstream: http2.Http2Server;
  let relay: SidecarProcess;
  let grpcRelay: SidecarProcess;
  before(async () => {
    upstream = await startConnectEcho();
    relay = await startSidecarProcess(['--upstream', upstream.url, '--data-plane', 'relay']);
    // A minimal h2c gRPC server: one 256-byte message and grpc-status 0 for every call.
    const reply = Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), Buffer.alloc(256, 7)]);
    grpcUpstream = http2.createServer();
    grpcUpstream.on('stream', (stream) => {
      stream.on('error', () => {});
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(reply);
      });
    });
    await new Promise<void>((r) => grpcUpstream.listen(0, '127.0.0.1', r));
    grpcRelay = await startSidecarProcess(['--upstream', `http://127.0.0.1:${(grpcUpstream.address() as AddressInfo).port}`, '--data-plane', 'relay']);
  });
  after(async () => {
    await relay.stop();
    await grpcRelay.stop();
    await upstream.close();
    await new Promise((r) => grpcUpstream.close(r));
  });

  it('nghttp -v gets its answer', async () => {
    const r = await run('nghttp', ['-v', `${relay.url}/v1/echo/42`], 20_000);
    assert.equal(r.status, 0, r.stderr);
    // nghttp opens its request on stream 13, after PRIORITY frames for idle streams 3 to 11.
    assert.match(r.stdout, /recv \(stream_id=13\) :status: 200/);
    assert.match(r.stdout, /recv DATA frame <length=\d+, flags=0x01, stream_id=13>/);
  });

  it('h2load -n 1000 -c 4 -m 10: every call succeeds and is counted once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-relay-h2load-'));
    const body = join(dir, 'message.bin');
    writeFileSync(body, Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), Buffer.alloc(256, 1)]));
    const r = await run('h2load', ['-n', '1000', '-c', '4', '-m', '10', '-d', body, '-H', 'content-type: application/grpc', '-H', 'te: trailers', `${grpcRelay.url}/bench.v1.Bench/Unary`], 60_000);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored/);
    await eventually(async () => {
      const ok = (await scrape(grpcRelay)).filter((s) => s.name === 'rpcscope_calls_total' && s.labels.code === 'OK');
      return ok.reduce((n, s) => n + s.value, 0) === 1000;
    }, '1000 calls counted OK', 5000);
    const messages = (await scrape(grpcRelay)).filter((s) => s.name === 'rpcscope_messages_total');
    assert.deepEqual(messages.map((s) => [s.labels.flow, s.value]).sort(), [['request', 1000], ['response', 1000]]);
  });
});
