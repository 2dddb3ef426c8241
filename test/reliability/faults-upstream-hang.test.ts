// Fault: the app behind the real binary accepts calls and never answers them
// (a deadlock, a full thread pool, a stuck database). Nothing but the caller
// can end such a call, so what the caller does must reach the app:
//
//   - a gRPC deadline (grpc-timeout), with --enforce-deadlines: the sidecar
//     answers DEADLINE_EXCEEDED itself and resets the app's stream (CANCEL);
//   - a cancel (gRPC, or REST over HTTP/1.1 or HTTP/2 given up by its
//     client): the app's HTTP/2 stream is reset with CANCEL, its HTTP/1.1
//     connection closed (HTTP/1.1 has no other way to end one request).
//
// Afterwards nothing stays open: the app has no stream or socket of those
// calls left, `rpcscope_calls_active` is 0, /debug/connections lists no client
// connection, and the sidecar's open file descriptors are back to what they
// were before.
import assert from 'node:assert/strict';
import { readdirSync, readlinkSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseExposition, sum } from '../support/metrics-text.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const { NGHTTP2_CANCEL } = http2.constants;
const raw = (b: Buffer): Buffer => b;
const GRPC_CALLS = 20;
const REST_CALLS = 10;
const SCENARIO_H2 = 'HTTP/2 app that never answers';
const SCENARIO_H1 = 'HTTP/1.1 app that never answers';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** An HTTP/2 app that answers `/warm` and holds every other stream, noting how each one ended. */
class HangingH2App {
  readonly server = http2.createServer();
  /** Streams received and not yet closed, by path. */
  readonly open = new Map<http2.ServerHttp2Stream, string>();
  /** How each held stream closed: its RST_STREAM code as the app saw it. */
  readonly closedWith: number[] = [];
  received = 0;

  constructor() {
    this.server.on('session', (s) => s.on('error', () => {}));
    this.server.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      const path = String(headers[':path']);
      if (path === '/warm') return void stream.respond({ ':status': 200 }, { endStream: true });
      this.received++;
      this.open.set(stream, path);
      stream.resume();
      stream.on('close', () => {
        this.open.delete(stream);
        this.closedWith.push(stream.rstCode ?? -1);
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

/** An HTTP/1.1 app that answers `/warm` and holds every other request, noting when its connection closes. */
class HangingH1App {
  readonly server = http.createServer();
  /** Requests held whose connection is still open. */
  readonly open = new Set<http.IncomingMessage>();
  received = 0;
  closed = 0;

  constructor() {
    this.server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.url === '/warm') return void res.end('warm');
      this.received++;
      this.open.add(req);
      req.resume();
      req.socket.once('close', () => {
        this.open.delete(req);
        this.closed++;
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

const fdCount = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

/** What each open descriptor is (`socket:[inode]`), to name one left open. */
function fdList(pid: number): string[] {
  return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
    try {
      return [`${fd}:${readlinkSync(`/proc/${pid}/fd/${fd}`)}`];
    } catch {
      return [];
    }
  });
}

/**
 * A GET on a connection of its own, closed with the answer: a kept-alive one
 * (fetch keeps them) would be one more descriptor open in the sidecar.
 */
function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { connection: 'close' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
  });
}

async function scrape(sc: SidecarProcess): Promise<ReturnType<typeof parseExposition>> {
  return parseExposition((await get(`${sc.adminUrl}/metrics`)).body);
}

async function debugConnections(sc: SidecarProcess): Promise<{ downstream: { connections: number }; upstream: { connections: number } }> {
  return JSON.parse((await get(`${sc.adminUrl}/debug/connections`)).body) as { downstream: { connections: number }; upstream: { connections: number } };
}

/** One warm-up call that the app answers: the sidecar's upstream connection is then open, as in the steady state. */
async function warmUp(sc: SidecarProcess): Promise<void> {
  assert.equal((await get(`${sc.url}/warm`)).status, 200);
}

/** What is left open by the sidecar once its clients are gone: waits until it settles back to `baseline` fds, else reports it. */
async function settled(sc: SidecarProcess, baselineFds: number): Promise<{ fdsAbove: number; active: number; clients: number }> {
  const end = Date.now() + 20_000;
  for (;;) {
    const m = await scrape(sc);
    const conns = await debugConnections(sc);
    const state = { fdsAbove: fdCount(sc.proc.pid!) - baselineFds, active: sum(m, 'rpcscope_calls_active', {}), clients: conns.downstream.connections };
    if ((state.fdsAbove <= 0 && state.active === 0 && state.clients === 0) || Date.now() > end) return state;
    await sleep(100);
  }
}

/** A gRPC call over a raw HTTP/2 session with a grpc-timeout and no timer of its own: only the sidecar can end it. */
function rawDeadlineCall(origin: string, timeout: string): Promise<{ grpcStatus: string | undefined; rstCode: number | undefined }> {
  return new Promise((resolve) => {
    const session = http2.connect(origin);
    session.on('error', () => {});
    const req = session.request({ ':method': 'POST', ':path': '/test.Echo/Unary', 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': timeout });
    let grpcStatus: string | undefined;
    req.on('response', (h) => (grpcStatus ??= h['grpc-status'] as string | undefined));
    req.on('trailers', (h) => (grpcStatus ??= h['grpc-status'] as string | undefined));
    req.on('error', () => {});
    req.resume();
    req.on('close', () => {
      session.close();
      resolve({ grpcStatus, rstCode: req.rstCode });
    });
    req.end(Buffer.from([0, 0, 0, 0, 2, 0x67, 0x6f]));
  });
}

function grpcCall(client: grpc.Client, options: grpc.CallOptions, onCall: (call: grpc.ClientUnaryCall) => void = () => {}): Promise<number> {
  return new Promise((resolve) => {
    const call = client.makeUnaryRequest('/test.Echo/Unary', raw, raw, Buffer.from('hi'), new grpc.Metadata(), options, (err) => resolve(err ? err.code : grpc.status.OK));
    onCall(call);
  });
}

/** A REST call over HTTP/1.1 on its own connection, given up once the app holds it (the client closes its connection). */
function restH1GivenUp(url: string, heldBy: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get(`${url}/orders/1`, { agent: false });
    req.on('error', () => resolve());
    req.on('close', () => resolve());
    void until('the app to hold the HTTP/1.1 call', heldBy).then(() => req.destroy());
  });
}

/** A REST call over HTTP/2, given up (RST_STREAM CANCEL) once the app holds it. */
function restH2GivenUp(session: http2.ClientHttp2Session, heldBy: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const req = session.request({ ':method': 'GET', ':path': '/orders/1' });
    req.on('error', () => {});
    req.on('close', () => resolve());
    void until('the app to hold the HTTP/2 call', heldBy).then(() => req.close(NGHTTP2_CANCEL));
  });
}

describe('an HTTP/2 app that accepts calls and never answers, behind the real binary with --enforce-deadlines', () => {
  let app: HangingH2App;
  let sc: SidecarProcess;
  let baselineFds: number;
  let baseline: string[];

  before(async () => {
    app = new HangingH2App();
    sc = await startSidecarProcess(['--upstream', await app.listen(), '--upstream-protocol', 'http2', '--enforce-deadlines', '--log-level', 'info']);
    await warmUp(sc);
    await until('the warm-up connection to close', async () => (await debugConnections(sc)).downstream.connections === 0);
    baselineFds = fdCount(sc.proc.pid!);
    baseline = fdList(sc.proc.pid!);
  });
  after(async () => {
    await sc.stop();
    app.server.close();
  });

  it('deadlines, cancels and given-up REST calls all reach the app as RST_STREAM(CANCEL), and nothing stays open', async () => {
    const client = new grpc.Client(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure());
    // The sidecar's own answer, to a caller that keeps no timer.
    const rawDeadline = await rawDeadlineCall(sc.url, '500m');
    assert.equal(rawDeadline.grpcStatus, String(grpc.status.DEADLINE_EXCEEDED));
    // grpc-js callers with a deadline, and callers that cancel once the app holds their call.
    const deadlines = Array.from({ length: GRPC_CALLS }, () => grpcCall(client, { deadline: Date.now() + 800 }));
    const cancels = Array.from({ length: GRPC_CALLS }, () =>
      grpcCall(client, {}, (call) => void until('the app to hold the calls', () => app.received >= 1 + GRPC_CALLS * 2).then(() => call.cancel())),
    );
    const deadlineCodes = await Promise.all(deadlines);
    const cancelCodes = await Promise.all(cancels);
    client.close();

    // REST, over HTTP/2 and over HTTP/1.1 (which the sidecar sends on as HTTP/2), given up by the client.
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    const restBefore = app.received;
    await Promise.all(Array.from({ length: REST_CALLS }, () => restH2GivenUp(session, () => app.received >= restBefore + REST_CALLS)));
    session.close();
    await Promise.all(Array.from({ length: REST_CALLS }, () => restH1GivenUp(sc.url, () => app.received >= restBefore + 2 * REST_CALLS)));

    const total = 1 + 2 * GRPC_CALLS + 2 * REST_CALLS;
    await until('the app to see every held stream close', () => app.closedWith.length === total);
    const left = await settled(sc, baselineFds);
    const wrong = deadlineCodes.filter((c) => c !== grpc.status.DEADLINE_EXCEEDED).length + cancelCodes.filter((c) => c !== grpc.status.CANCELLED).length;
    reportFigure({ section: 'faults', scenario: SCENARIO_H2, name: 'calls', value: total, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO_H2, name: 'calls lost', value: wrong, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO_H2, name: 'upstream streams left open', value: app.open.size });
    reportFigure({ section: 'faults', scenario: SCENARIO_H2, name: 'file descriptors above baseline', value: Math.max(0, left.fdsAbove) });

    assert.deepEqual(deadlineCodes, Array<number>(GRPC_CALLS).fill(grpc.status.DEADLINE_EXCEEDED));
    assert.deepEqual(cancelCodes, Array<number>(GRPC_CALLS).fill(grpc.status.CANCELLED));
    assert.equal(app.received, total);
    assert.deepEqual(app.closedWith, Array<number>(total).fill(NGHTTP2_CANCEL));
    assert.equal(app.open.size, 0);
    const m = await scrape(sc);
    assert.deepEqual(left, { fdsAbove: Math.min(0, left.fdsAbove), active: 0, clients: 0 }, `open now and not before: ${fdList(sc.proc.pid!).filter((f) => !baseline.includes(f)).join(' ')}`);
    assert.ok(sum(m, 'rpcscope_calls_total', { protocol: 'grpc', code: 'DEADLINE_EXCEEDED' }) >= 1, 'the sidecar answered DEADLINE_EXCEEDED');
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc', code: 'OK' }), 0);
    assert.equal(sum(m, 'rpcscope_calls_total', { protocol: 'grpc' }), 1 + 2 * GRPC_CALLS);
    // The app kept its one connection (it never failed); the clients' are gone.
    assert.equal((await debugConnections(sc)).upstream.connections, 1);
  });
});

describe('an HTTP/1.1 app that accepts requests and never answers, behind the real binary', () => {
  let app: HangingH1App;
  let sc: SidecarProcess;
  let baselineFds: number;
  let warmUpCalls: number;

  before(async () => {
    app = new HangingH1App();
    sc = await startSidecarProcess(['--upstream', await app.listen(), '--upstream-protocol', 'http1', '--enforce-deadlines', '--log-level', 'info']);
    await warmUp(sc);
    await until('the warm-up connection to close', async () => (await debugConnections(sc)).downstream.connections === 0);
    baselineFds = fdCount(sc.proc.pid!);
    warmUpCalls = sum(await scrape(sc), 'rpcscope_calls_total', {});
  });
  after(async () => {
    await sc.stop();
    app.server.closeAllConnections();
    app.server.close();
  });

  it('a REST call given up over HTTP/1.1 or HTTP/2 closes its upstream connection, and nothing stays open', async () => {
    await Promise.all(Array.from({ length: REST_CALLS }, () => restH1GivenUp(sc.url, () => app.received >= REST_CALLS)));
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    await Promise.all(Array.from({ length: REST_CALLS }, () => restH2GivenUp(session, () => app.received >= 2 * REST_CALLS)));
    session.close();

    const total = 2 * REST_CALLS;
    await until('the app to see every held request lose its connection', () => app.closed === total);
    const left = await settled(sc, baselineFds);
    // Each call given up is still a call: counted once, as its client's cancel.
    const counted = sum(await scrape(sc), 'rpcscope_calls_total', { protocol: 'rest' }) - warmUpCalls;
    reportFigure({ section: 'faults', scenario: SCENARIO_H1, name: 'calls', value: total, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO_H1, name: 'calls lost', value: Math.max(0, total - counted), unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO_H1, name: 'upstream sockets left open', value: app.open.size });
    reportFigure({ section: 'faults', scenario: SCENARIO_H1, name: 'file descriptors above baseline', value: Math.max(0, left.fdsAbove) });
    assert.equal(app.received, total);
    assert.equal(app.open.size, 0);
    assert.deepEqual(left, { fdsAbove: Math.min(0, left.fdsAbove), active: 0, clients: 0 });
    assert.equal(counted, total);
  });
});
