// Fault: the sidecar itself is killed (SIGKILL: the OOM killer, a node lost)
// under load — grpc-js unary calls and REST over HTTP/1.1 and HTTP/2, each
// client a loop of calls — and started again on the same port. Nothing can save
// the calls it held at that moment, but it must cost exactly those: every call
// either got its own right answer, or failed as a lost connection
// (UNAVAILABLE, a reset or closed socket) and was in flight when the signal was
// sent. After the restart new calls succeed, from the clients that saw the
// crash (grpc-js reconnects) and from new ones.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { parseExposition, sum } from '../support/metrics-text.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const raw = (b: Buffer): Buffer => b;
/** Each answer waits this long, so that the kill always finds calls in flight. */
const APP_DELAY_MS = 40;
const WORKERS = { grpc: 30, h1: 20, h2: 20 };
/** Calls finished before the kill. */
const CALLS_BEFORE_KILL = 400;
const SCENARIO = `sidecar SIGKILL under load (${WORKERS.grpc + WORKERS.h1 + WORKERS.h2} clients calling in a loop), restarted on its port`;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** An HTTP/2 app: gRPC unary echo and REST `GET /items/:id`, each answered after APP_DELAY_MS. */
async function startApp(): Promise<{ url: string; close(): void }> {
  const server = http2.createServer();
  server.on('session', (s) => s.on('error', () => {}));
  server.on('stream', (stream, headers) => {
    stream.on('error', () => {});
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () =>
      setTimeout(() => {
        if (stream.destroyed) return;
        if (headers['content-type'] === 'application/grpc') {
          stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
          stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
          stream.end(Buffer.concat(chunks));
        } else {
          stream.respond({ ':status': 200, 'content-type': 'application/json' });
          stream.end(JSON.stringify({ path: headers[':path'] }));
        }
      }, APP_DELAY_MS),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

/** How a call ended: its right answer, or the error its client saw. */
type Outcome = { ok: true } | { ok: false; error: string };

function grpcUnary(client: grpc.Client, text: string): Promise<Outcome> {
  return new Promise((resolve) => {
    client.makeUnaryRequest('/test.Echo/Unary', raw, raw, Buffer.from(text), (err, value) => {
      if (err) resolve({ ok: false, error: `grpc ${grpc.status[err.code]}` });
      else resolve(value?.toString() === text ? { ok: true } : { ok: false, error: `wrong echo ${value?.toString()}` });
    });
  });
}

function restH1(agent: http.Agent, port: number, id: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: `/items/${id}`, agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, error: `h1 ${err.code ?? err.message}` }));
      res.on('end', () => resolve(res.statusCode === 200 && res.complete && body === JSON.stringify({ path: `/items/${id}` }) ? { ok: true } : { ok: false, error: `wrong answer ${res.statusCode} ${body}` }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, error: `h1 ${err.code ?? err.message}` }));
  });
}

function restH2(session: http2.ClientHttp2Session, id: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let req: http2.ClientHttp2Stream;
    try {
      req = session.request({ ':method': 'GET', ':path': `/items/${id}` });
    } catch (err) {
      return resolve({ ok: false, error: `h2 ${(err as NodeJS.ErrnoException).code}` });
    }
    let status = 0;
    let body = '';
    req.setEncoding('utf8');
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (c: string) => (body += c));
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ ok: false, error: `h2 ${err.code ?? err.message}` }));
    req.on('close', () => resolve(status === 200 && body === JSON.stringify({ path: `/items/${id}` }) ? { ok: true } : { ok: false, error: `h2 closed, status ${status}, rst ${req.rstCode}` }));
  });
}

/** A lost connection, as each client says it: grpc-js UNAVAILABLE, a reset or closed HTTP/1.1 socket, an HTTP/2 session gone. */
const CONNECTION_LOST = /^(grpc UNAVAILABLE|h1 (ECONNRESET|ECONNREFUSED|EPIPE|socket hang up|ERR_STREAM_PREMATURE_CLOSE|aborted)|h2 (ECONNRESET|ERR_HTTP2_STREAM_ERROR|ERR_HTTP2_SESSION_ERROR|ERR_HTTP2_INVALID_SESSION|ERR_HTTP2_GOAWAY_SESSION|closed, status 0))/;

describe('the sidecar killed (SIGKILL) under load and restarted on its port, the real binary', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;

  before(async () => {
    app = await startApp();
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http2', '--log-level', 'info']);
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('fails only the calls in flight at the kill, each as a lost connection; after the restart every call succeeds', async () => {
    const port = sc.port;
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS.h1 });
    const session = http2.connect(sc.url);
    session.on('error', () => {});

    let killing = false;
    let finishedBeforeKill = 0;
    let next = 0;
    /** Calls started and not yet ended. */
    const pending = new Set<number>();
    const results: { id: number; outcome: Outcome }[] = [];
    const loop = async (call: (id: string) => Promise<Outcome>): Promise<void> => {
      while (!killing) {
        const id = next++;
        pending.add(id);
        const outcome = await call(String(id));
        pending.delete(id);
        results.push({ id, outcome });
        if (!killing) finishedBeforeKill++;
      }
    };
    const workers = [
      ...Array.from({ length: WORKERS.grpc }, () => loop((id) => grpcUnary(client, `call ${id}`))),
      ...Array.from({ length: WORKERS.h1 }, () => loop((id) => restH1(agent, port, id))),
      ...Array.from({ length: WORKERS.h2 }, () => loop((id) => restH2(session, id))),
    ];

    const end = Date.now() + 120_000;
    while (finishedBeforeKill < CALLS_BEFORE_KILL && Date.now() < end) await sleep(10);
    assert.ok(finishedBeforeKill >= CALLS_BEFORE_KILL, `only ${finishedBeforeKill} calls finished under load`);
    // Synchronously with the kill: the calls started and not yet ended are those in flight.
    killing = true;
    const inFlight = new Set(pending);
    sc.proc.kill('SIGKILL');
    await Promise.all(workers);
    await sc.exited;
    session.destroy();

    const failed = results.filter((r) => !r.outcome.ok);
    const failedOutOfFlight = failed.filter((r) => !inFlight.has(r.id));
    const notAsLost = failed.filter((r) => !r.outcome.ok && !CONNECTION_LOST.test(r.outcome.error));
    reportFigure({ section: 'faults', scenario: SCENARIO, name: 'calls before the kill', value: finishedBeforeKill, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO, name: 'calls in flight at the kill', value: inFlight.size, unit: 'calls' });
    reportFigure({ section: 'faults', scenario: SCENARIO, name: 'calls failed', value: failed.length, unit: 'calls' });
    const seen = new Map<string, number>();
    for (const r of failed) if (!r.outcome.ok) seen.set(r.outcome.error, (seen.get(r.outcome.error) ?? 0) + 1);
    reportFigure({ section: 'faults', scenario: SCENARIO, name: 'errors the clients saw', value: [...seen].map(([e, n]) => `${e} ×${n}`).join(', ') });
    reportFigure({ section: 'faults', scenario: SCENARIO, name: 'calls failed not in flight at the kill', value: failedOutOfFlight.length, unit: 'calls' });
    assert.equal(results.length, next);
    assert.deepEqual(failedOutOfFlight, []);
    // A wrong answer is not a lost connection: it fails here too.
    assert.deepEqual(notAsLost, []);

    sc = await startSidecarProcess(['--listen', `127.0.0.1:${port}`, '--upstream', app.url, '--upstream-protocol', 'http2', '--log-level', 'info']);
    assert.equal(sc.port, port);
    // The grpc-js channel that saw the crash reconnects by itself, once its backoff allows; HTTP clients open new connections.
    await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 60_000, (err) => (err ? reject(err) : resolve())));
    const session2 = http2.connect(sc.url);
    session2.on('error', () => {});
    const after = await Promise.all([
      ...Array.from({ length: 50 }, (_, i) => grpcUnary(client, `after ${i}`)),
      ...Array.from({ length: 50 }, (_, i) => restH1(agent, port, `after-${i}`)),
      ...Array.from({ length: 50 }, (_, i) => restH2(session2, `after-${i}`)),
    ]);
    client.close();
    agent.destroy();
    session2.close();
    assert.deepEqual(after.filter((o) => !o.ok), []);
    const m = parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
    assert.equal(sum(m, 'rpcscope_calls_total', { code: 'OK' }), 150);
    assert.equal(sum(m, 'rpcscope_calls_active', {}), 0);
  });
});
