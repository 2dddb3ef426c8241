// Fault: the sidecar itself is told to stop (SIGTERM, as Kubernetes does at a
// pod's termination) while a few hundred calls are in flight: grpc-js unary
// calls, grpc-js server streams, and REST over HTTP/1.1 and HTTP/2. The README's
// drain (`--drain-timeout`, no `--drain-delay`): stop accepting at once, GOAWAY
// the HTTP/2 clients, ask HTTP/1.1 clients to close with their response, let
// every call in flight finish, exit 0. The app holds every answer until the
// drain has begun, so each call is certainly in flight when the signal lands;
// its streams then run on for about 2 s, well inside the drain timeout.
// (test/acceptance/drain-delay.test.ts covers `--drain-delay` itself.)
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseExposition, sum } from '../support/metrics-text.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const raw = (b: Buffer): Buffer => b;
const UNARY = 100;
const STREAMS = 20;
const STREAM_MESSAGES = 20;
const STREAM_GAP_MS = 100;
const REST_H1 = 80;
const REST_H2 = 80;
const IN_FLIGHT = UNARY + STREAMS + REST_H1 + REST_H2;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function grpcFrame(payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/**
 * An HTTP/2 app that holds every answer until `release()`: gRPC `Unary` echoes
 * its request, gRPC `Stream` sends one message at once and the rest after the
 * release, STREAM_GAP_MS apart; REST `GET /items/:id` answers its id.
 */
class HoldingApp {
  readonly server = http2.createServer();
  received = 0;
  private released = false;
  private readonly waiting: (() => void)[] = [];

  constructor() {
    this.server.on('session', (s) => s.on('error', () => {}));
    this.server.on('stream', (stream, headers) => this.serve(stream, headers));
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  release(): void {
    this.released = true;
    for (const go of this.waiting.splice(0)) go();
  }

  private held(go: () => void): void {
    if (this.released) go();
    else this.waiting.push(go);
  }

  private serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => {});
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      this.received++;
      const path = headers[':path'] ?? '';
      if (path === '/test.Echo/Unary') {
        this.held(() => {
          if (stream.destroyed) return;
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          stream.end(Buffer.concat(chunks));
        });
      } else if (path === '/test.Echo/Stream') {
        const name = Buffer.concat(chunks).subarray(5).toString();
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.write(grpcFrame(Buffer.from(`${name}:0`)));
        this.held(() => {
          let n = 1;
          const next = (): void => {
            if (stream.destroyed) return;
            if (n === STREAM_MESSAGES) return void stream.end();
            stream.write(grpcFrame(Buffer.from(`${name}:${n++}`)));
            setTimeout(next, STREAM_GAP_MS);
          };
          setTimeout(next, STREAM_GAP_MS);
        });
      } else {
        this.held(() => {
          if (stream.destroyed) return;
          stream.respond({ ':status': 200, 'content-type': 'application/json' });
          stream.end(JSON.stringify({ path }));
        });
      }
    });
  }
}

type Outcome = { ok: true } | { ok: false; why: string };

function grpcUnary(client: grpc.Client, text: string): Promise<Outcome> {
  return new Promise((resolve) => {
    client.makeUnaryRequest('/test.Echo/Unary', raw, raw, Buffer.from(text), (err, value) => {
      if (err) resolve({ ok: false, why: `${grpc.status[err.code]} ${err.details}` });
      else resolve(value?.toString() === text ? { ok: true } : { ok: false, why: `echo ${value?.toString()}` });
    });
  });
}

function grpcStream(client: grpc.Client, name: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const got: string[] = [];
    const call = client.makeServerStreamRequest('/test.Echo/Stream', raw, raw, Buffer.from(name));
    call.on('data', (m: Buffer) => got.push(m.toString()));
    call.on('error', (err: grpc.ServiceError) => resolve({ ok: false, why: `${grpc.status[err.code]} ${err.details} after ${got.length}` }));
    call.on('end', () => {
      const want = Array.from({ length: STREAM_MESSAGES }, (_, i) => `${name}:${i}`);
      resolve(JSON.stringify(got) === JSON.stringify(want) ? { ok: true } : { ok: false, why: `messages ${got.join(',')}` });
    });
  });
}

/** A REST call over HTTP/1.1 keep-alive; `closed` collects whether the answer asked to close the connection. */
function restH1(agent: http.Agent, port: number, id: string, closed: boolean[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/items/${id}`, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        closed.push(res.headers.connection === 'close');
        resolve(res.statusCode === 200 && body === JSON.stringify({ path: `/items/${id}` }) ? { ok: true } : { ok: false, why: `${res.statusCode} ${body}` });
      });
      res.on('error', (err) => resolve({ ok: false, why: err.message }));
    });
    req.on('error', (err) => resolve({ ok: false, why: err.message }));
  });
}

function restH2(session: http2.ClientHttp2Session, id: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'GET', ':path': `/items/${id}` });
    let status = 0;
    let body = '';
    req.setEncoding('utf8');
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: string) => (body += c));
    req.on('error', (err) => resolve({ ok: false, why: err.message }));
    req.on('end', () => resolve(status === 200 && body === JSON.stringify({ path: `/items/${id}` }) ? { ok: true } : { ok: false, why: `${status} ${body}` }));
  });
}

/** Whether a new TCP connection to `port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

describe('the sidecar told to stop (SIGTERM) with calls in flight, the real binary', () => {
  let app: HoldingApp;
  let sc: SidecarProcess;

  before(async () => {
    app = new HoldingApp();
    sc = await startSidecarProcess(['--upstream', await app.listen(), '--upstream-protocol', 'http2', '--drain-timeout', '60s', '--log-level', 'info']);
  });
  after(async () => {
    await sc.stop();
    app.release();
    app.server.close();
  });

  it(`loses none of ${IN_FLIGHT} calls in flight (grpc-js unary and streams, REST over HTTP/1.1 and HTTP/2), refuses new connections, exits 0`, async () => {
    const clients = [0, 1].map(() => new grpc.Client(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure()));
    const agent = new http.Agent({ keepAlive: true, maxSockets: REST_H1 });
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    let goaway = false;
    session.on('goaway', () => (goaway = true));
    const h1Closed: boolean[] = [];

    const calls: { kind: string; done: Promise<Outcome> }[] = [
      ...Array.from({ length: UNARY }, (_, i) => ({ kind: `unary ${i}`, done: grpcUnary(clients[i % 2]!, `call ${i}`) })),
      ...Array.from({ length: STREAMS }, (_, i) => ({ kind: `stream ${i}`, done: grpcStream(clients[i % 2]!, `s${i}`) })),
      ...Array.from({ length: REST_H1 }, (_, i) => ({ kind: `rest h1 ${i}`, done: restH1(agent, sc.port, `h1-${i}`, h1Closed) })),
      ...Array.from({ length: REST_H2 }, (_, i) => ({ kind: `rest h2 ${i}`, done: restH2(session, `h2-${i}`) })),
    ];

    // Every call has reached the app, which holds it: all are in flight in the sidecar.
    await until(`the app to receive ${IN_FLIGHT} calls (has ${app.received})`, () => app.received === IN_FLIGHT);
    const active = sum(parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text()), 'rpcscope_calls_active', {});
    assert.equal(active, IN_FLIGHT);

    const signalled = Date.now();
    sc.proc.kill('SIGTERM');
    // The drain has begun once the listening socket is gone: new connections are refused.
    await until('new connections to be refused', () => refused(sc.port), 30_000);
    const readyz = await fetch(`${sc.adminUrl}/readyz`);
    assert.equal(readyz.status, 503);
    await readyz.arrayBuffer();
    // A client arriving now is refused before anything reaches the app.
    const late = new grpc.Client(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure());
    const lateCall = await grpcUnary(late, 'late');
    late.close();
    assert.equal(lateCall.ok, false);
    assert.match(lateCall.ok ? '' : lateCall.why, /^UNAVAILABLE .*ECONNREFUSED/);
    await until('the HTTP/2 client to be sent GOAWAY', () => goaway, 30_000);
    assert.equal(app.received, IN_FLIGHT, 'a call after the drain began reached the app');

    app.release();
    const outcomes = await Promise.all(calls.map(async (c) => ({ kind: c.kind, outcome: await c.done })));
    const lost = outcomes.filter((o) => !o.outcome.ok);
    const code = await sc.exited;
    for (const c of clients) c.close();
    agent.destroy();
    session.destroy();

    reportFigure({ section: 'faults', scenario: `sidecar SIGTERM with ${IN_FLIGHT} calls in flight`, name: 'calls in flight', value: IN_FLIGHT, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: `sidecar SIGTERM with ${IN_FLIGHT} calls in flight`, name: 'calls lost', value: lost.length, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: `sidecar SIGTERM with ${IN_FLIGHT} calls in flight`, name: 'drain time', value: Date.now() - signalled, unit: 'ms' });
    assert.deepEqual(lost, []);
    // Every HTTP/1.1 answer given during the drain asked its client to close the connection.
    assert.deepEqual(h1Closed, Array<boolean>(REST_H1).fill(true));
    assert.equal(code, 0);
    assert.match(sc.log(), /"draining"/);
    assert.doesNotMatch(sc.log(), /drain timeout/);
  });
});
