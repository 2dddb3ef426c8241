// Soak: mixed traffic through the real `sidecar/bin/rpcscope` for a long while —
// gRPC unary and server streams (grpc-js, to a grpc-js server), REST over
// HTTP/1.1 keep-alive and over HTTP/2 (to connect-node's REST routes) — with
// clients that reconnect now and then, as pods and their pools do. A sidecar
// that leaks shows it here: memory that keeps growing, file descriptors that
// stay open after their connections closed, a count that drifts from what the
// clients did. The open fds, the counts and RSS growth under traffic (the < 10 %
// target) are asserted; event-loop delay is reported.
//
// 60 s of traffic by default (CI); RPCSCOPE_SOAK=1 runs the 10-minute soak,
// RPCSCOPE_SOAK_SECONDS=N any other length (20 s or more). An environment variable rather than
// a `--soak` argument: `node --test` does not hand its own arguments to the
// test files (test/reliability/report.ts --soak sets the variable).
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, type EchoRequestObject, type EchoResponseObject } from '@rpcscope/demo';
import { percentile, scrape, settledScrape } from '../support/admin-scrape.ts';
import { startEchoUpstreamProcess, type EchoUpstreamProcess } from '../support/echo-upstream-process.ts';
import { sum, type Sample } from '../support/metrics-text.ts';
import { MB, cpuSeconds, rssBytes, settledFds } from '../support/process-stats.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const SOAK_S = Number(process.env.RPCSCOPE_SOAK_SECONDS ?? (process.env.RPCSCOPE_SOAK === '1' ? 600 : 60));
/**
 * Traffic before the baseline is taken: the heap, JIT and connection pools grow to
 * their working size first. 50 s whatever the soak's length: after 10 s the
 * sidecar's RSS was still climbing to its working size (first quarter → last
 * quarter of a 60 s soak: +21 %); on Node 20 it was flat after 30 s (+2.2 to
 * +2.8 % in 60 s soaks, one with a second core kept busy; +0.7 % in the 10-minute
 * soak). Node 24 reaches its working size (about 166 MB here) later: after 30 s,
 * full CI runs read +6.5 % and +10.1 % (first quarters 156.7 to 161.6 MB, last
 * 172 MB), while a 120 s soak was flat, 165.9 to 166.0 MB.
 */
const WARMUP_S = 50;
/**
 * The baseline is taken idle, and idle V8 hands heap back (RSS after the warm-up
 * was 69 to 105 MB across runs, against about 95 to 127 MB under the traffic):
 * the soak's first seconds regrow it. The RSS trace starts this long into the
 * soak's traffic, so the first quarter is not read against a heap still regrowing
 * (a CI run read 109.3 / 122.0 / 121.3 / 123.1 MB, +12.6 %, with nothing leaking).
 */
const REGROW_S = 10;
/**
 * Under this traffic RSS swings by about 30 MB every 2 to 3 s, as the collector
 * runs and hands pages back: a quarter's peak sampled once a second missed the
 * top of some swings. Four samples a second catch it.
 */
const RSS_SAMPLE_MS = 250;
/** The shortest soak whose RSS trace reads: 10 s of it after REGROW_S, 40 samples, ten a quarter. */
const SOAK_MIN_S = REGROW_S + 10;
if (!Number.isFinite(SOAK_S) || SOAK_S < SOAK_MIN_S) {
  throw new Error(`RPCSCOPE_SOAK_SECONDS must be a number of seconds, ${SOAK_MIN_S} or more (the RSS trace starts ${REGROW_S} s into the traffic), got ${process.env.RPCSCOPE_SOAK_SECONDS}`);
}
/** Callers per kind; each runs one call at a time, back to back, on its own connection. */
const CALLERS = { grpcUnary: 6, grpcStream: 3, restH1: 6, restH2: 6 } as const;
/** A caller closes its connection and opens a new one after this many calls: connections come and go all through the soak. */
const CALLS_PER_CONNECTION = 300;
const SCENARIO = `${SOAK_S} s of mixed traffic (gRPC unary and streams, REST over HTTP/1.1 and HTTP/2), clients reconnecting`;

type Kind = keyof typeof CALLERS;

interface Echo extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, cb: (err: grpc.ServiceError | null, res?: EchoResponseObject) => void): grpc.ClientUnaryCall;
  ServerStream(req: Partial<EchoRequestObject>): grpc.ClientReadableStream<EchoResponseObject>;
}

/** One caller's connection: opened lazily, closed by the caller when it has made its share of calls or the traffic stops. */
interface Connection {
  call(i: number): Promise<string | undefined>;
  close(): void;
}

function grpcConnection(port: number, stream: boolean): Connection {
  const client = new GrpcJsEchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as Echo;
  return {
    close: () => client.close(),
    call: (i) =>
      new Promise((resolve) => {
        const message = `m${i}`;
        if (!stream) {
          client.Echo({ message }, (err, res) => resolve(err ? `${grpc.status[err.code]} ${err.details}` : res!.message === message ? undefined : `answered ${res!.message}`));
          return;
        }
        let n = 0;
        const call = client.ServerStream({ message, responses: 3 });
        call.on('data', (res: EchoResponseObject) => void (res.index === n && res.message === message && n++));
        call.on('error', (err: grpc.ServiceError) => resolve(`${grpc.status[err.code]} ${err.details}`));
        call.on('end', () => resolve(n === 3 ? undefined : `${n} of 3 messages right`));
      }),
  };
}

/** GET /v1/echo/{id} and POST /v1/echo in turn; each answer checked. */
function restRequest(i: number): { path: string; method: string; body?: string; want: string } {
  return i % 2 === 0 ? { path: `/v1/echo/id${i}`, method: 'GET', want: JSON.stringify({ id: `id${i}`, query: {} }) } : { path: '/v1/echo', method: 'POST', body: `body ${i} `.repeat(20), want: `body ${i} `.repeat(20) };
}

function h1Connection(url: string): Connection {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return {
    close: () => agent.destroy(),
    call: (i) =>
      new Promise((resolve) => {
        const r = restRequest(i);
        const req = http.request(`${url}${r.path}`, { method: r.method, agent }, (res) => {
          let got = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (got += d));
          res.on('end', () => resolve(res.statusCode === 200 && got === r.want ? undefined : `${res.statusCode} ${got.slice(0, 60)}`));
          res.on('error', (err) => resolve(err.message));
        });
        req.on('error', (err) => resolve(err.message));
        req.end(r.body);
      }),
  };
}

function h2Connection(url: string): Connection {
  const session = http2.connect(url);
  session.on('error', () => {});
  return {
    close: () => session.close(),
    call: (i) =>
      new Promise((resolve) => {
        const r = restRequest(i);
        const stream = session.request({ ':method': r.method, ':path': r.path });
        let status = 0;
        let got = '';
        stream.setEncoding('utf8');
        stream.on('response', (h) => (status = Number(h[':status'])));
        stream.on('data', (d: string) => (got += d));
        stream.on('end', () => resolve(status === 200 && got === r.want ? undefined : `${status} ${got.slice(0, 60)}`));
        stream.on('error', (err) => resolve(err.message));
        stream.end(r.body);
      }),
  };
}

/**
 * How long a call may take before it counts as lost: calls here take milliseconds,
 * so a call still unanswered after this long is one the sidecar hung.
 */
const CALL_TIMEOUT_MS = 30_000;
const HUNG = Symbol('hung');

/** The call's outcome, or HUNG if it has none within CALL_TIMEOUT_MS. */
async function answered(call: Promise<string | undefined>): Promise<string | undefined | typeof HUNG> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<typeof HUNG>((resolve) => (timer = setTimeout(() => resolve(HUNG), CALL_TIMEOUT_MS)));
  try {
    return await Promise.race([call, hung]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every caller until `seconds` have passed; the calls each kind made and every failure. */
async function traffic(sc: SidecarProcess, seconds: number): Promise<{ made: Record<Kind, number>; failures: string[] }> {
  const made: Record<Kind, number> = { grpcUnary: 0, grpcStream: 0, restH1: 0, restH2: 0 };
  const failures: string[] = [];
  const open = (kind: Kind): Connection =>
    kind === 'grpcUnary' ? grpcConnection(sc.port, false) : kind === 'grpcStream' ? grpcConnection(sc.port, true) : kind === 'restH1' ? h1Connection(sc.url) : h2Connection(sc.url);
  const until = Date.now() + seconds * 1000;
  const caller = async (kind: Kind): Promise<void> => {
    let conn = open(kind);
    for (let i = 0; Date.now() < until; i++) {
      if (i > 0 && i % CALLS_PER_CONNECTION === 0) {
        conn.close();
        conn = open(kind);
      }
      const wrong = await answered(conn.call(i));
      made[kind]++;
      if (wrong === HUNG) {
        // Named here rather than left to time the whole suite out; the connection goes, as a client's would.
        failures.push(`${kind} call ${i}: no answer within ${CALL_TIMEOUT_MS / 1000} s`);
        conn.close();
        conn = open(kind);
      } else if (wrong !== undefined) failures.push(`${kind} call ${i}: ${wrong}`);
    }
    conn.close();
  };
  await Promise.all(Object.entries(CALLERS).flatMap(([kind, n]) => Array.from({ length: n }, () => caller(kind as Kind))));
  return { made, failures };
}

/** calls_total by what the callers made. REST methods do not say which HTTP version carried them: both REST kinds are one total. */
function counted(samples: Sample[]): { grpcUnary: number; grpcStream: number; rest: number } {
  const calls = (where: Record<string, string>): number => sum(samples, 'rpcscope_calls_total', { direction: 'inbound', ...where });
  return {
    grpcUnary: calls({ protocol: 'grpc', method: 'echo.v1.EchoService/Echo' }),
    grpcStream: calls({ protocol: 'grpc', method: 'echo.v1.EchoService/ServerStream' }),
    rest: calls({ protocol: 'rest' }),
  };
}

describe('rpcscope binary under a soak of mixed traffic', { timeout: (SOAK_S + WARMUP_S + 600) * 1000 }, () => {
  let grpcUpstream: EchoUpstreamProcess;
  let restUpstream: EchoUpstreamProcess;
  let sc: SidecarProcess;
  before(async () => {
    [grpcUpstream, restUpstream] = await Promise.all([startEchoUpstreamProcess('grpc-js'), startEchoUpstreamProcess('connect')]);
    sc = await startSidecarProcess(['--upstream', restUpstream.url, '--grpc-upstream', grpcUpstream.url]);
  });
  after(async () => {
    await sc?.stop();
    await Promise.all([grpcUpstream?.close(), restUpstream?.close()]);
  });

  it(`holds ${SCENARIO}: no fd left open, every call counted, memory reported`, async () => {
    const pid = sc.proc.pid!;
    const warm = await traffic(sc, WARMUP_S);
    // Reported before any assertion, so that a call lost while warming up is in the report's total.
    reportFigure({ section: 'load', scenario: `warm-up of the soak, ${WARMUP_S} s`, name: 'calls lost', value: warm.failures.length, unit: 'calls' });
    assert.deepEqual(warm.failures.slice(0, 10), [], `${warm.failures.length} warm-up calls did not come back with their own answer`);
    const fdsStart = await settledFds(pid);
    const rssStart = rssBytes(pid);
    const start = await settledScrape(sc.adminUrl);

    // The event-loop gauges cover the time since the previous scrape: one scrape every 5 s gives a p99 per 5 s.
    const loopP99: number[] = [];
    let soaking = true;
    const watcher = (async () => {
      await scrape(sc.adminUrl);
      while (soaking) {
        await new Promise((r) => setTimeout(r, 5000));
        loopP99.push(sum(await scrape(sc.adminUrl), 'nodejs_eventloop_lag_p99_seconds') * 1000);
      }
    })();
    // RSS through the soak, for its peak under traffic; from REGROW_S on, the trace whose peak per quarter
    // tells a leak (still climbing) from a heap at its working size (flat).
    let rssPeak = rssBytes(pid);
    const rssTrace: number[] = [];
    const traceFrom = Date.now() + REGROW_S * 1000;
    const tracer = setInterval(() => {
      const b = rssBytes(pid);
      rssPeak = Math.max(rssPeak, b);
      if (Date.now() >= traceFrom) rssTrace.push(b);
    }, RSS_SAMPLE_MS);
    const cpu0 = cpuSeconds(pid);
    const soak = await traffic(sc, SOAK_S);
    const cpu = cpuSeconds(pid) - cpu0;
    clearInterval(tracer);
    soaking = false;
    await watcher;
    const quarters = [0, 1, 2, 3].map((q) => Math.max(...rssTrace.slice(Math.floor((q * rssTrace.length) / 4), Math.floor(((q + 1) * rssTrace.length) / 4))));

    const end = await settledScrape(sc.adminUrl);
    const fdsEnd = await settledFds(pid);
    const rssEnd = rssBytes(pid);
    const [atStart, atEnd] = [counted(start), counted(end)];
    const sidecar = { grpcUnary: atEnd.grpcUnary - atStart.grpcUnary, grpcStream: atEnd.grpcStream - atStart.grpcStream, rest: atEnd.rest - atStart.rest };
    const clients = { grpcUnary: soak.made.grpcUnary, grpcStream: soak.made.grpcStream, rest: soak.made.restH1 + soak.made.restH2 };
    const total = clients.grpcUnary + clients.grpcStream + clients.rest;
    const miscounted = Math.abs(sidecar.grpcUnary - clients.grpcUnary) + Math.abs(sidecar.grpcStream - clients.grpcStream) + Math.abs(sidecar.rest - clients.rest);
    const okCounted = sum(end, 'rpcscope_calls_total', { code: 'OK' }) - sum(start, 'rpcscope_calls_total', { code: 'OK' });

    const growth = ((rssEnd - rssStart) / rssStart) * 100;
    // Under the same traffic, the first quarter's peak against the last one's: a leak keeps climbing,
    // a heap that has reached its working size stays flat. The idle figures also move with when the
    // collector last ran, so this is the growth the < 10 % target is read against.
    const growthUnderTraffic = ((quarters[3]! - quarters[0]!) / quarters[0]!) * 100;
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'calls made', value: total, unit: 'calls' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'calls lost', value: soak.failures.length, unit: 'calls' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'calls miscounted by /metrics', value: miscounted + Math.abs(okCounted - total), unit: 'calls' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar RSS after warm-up → end (idle)', value: `${(rssStart / MB).toFixed(1)} → ${(rssEnd / MB).toFixed(1)} MB (peak under traffic ${(rssPeak / MB).toFixed(1)} MB)` });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar peak RSS in each quarter of the soak', value: quarters.map((b) => (b / MB).toFixed(1)).join(' / '), unit: 'MB' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar RSS growth under traffic, first quarter → last quarter peak (target < 10 %)', value: Number(growthUnderTraffic.toFixed(1)), unit: '%' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar RSS growth, idle after warm-up → idle at the end (asserted < 100 %: moves with when the collector last ran)', value: Number(growth.toFixed(1)), unit: '%' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar open fds after warm-up → end', value: `${fdsStart} → ${fdsEnd}` });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'event-loop delay p99 (worst 5 s window / median window)', value: `${Math.max(...loopP99).toFixed(1)} / ${percentile(loopP99, 50).toFixed(1)}`, unit: 'ms' });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'sidecar CPU', value: `${cpu.toFixed(1)} s over ${SOAK_S} s (${(cpu / SOAK_S).toFixed(2)} cores)` });
    reportFigure({ section: 'load', scenario: SCENARIO, name: 'throughput', value: Math.round(total / SOAK_S), unit: 'calls/s' });

    assert.deepEqual(soak.failures.slice(0, 10), [], `${soak.failures.length} of ${total} calls did not come back with their own answer`);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
    assert.deepEqual(sidecar, clients, 'calls_total counts every call the clients made, once');
    assert.equal(okCounted, total, 'every call counted OK');
    assert.equal(sum(end, 'rpcscope_calls_active'), 0, 'calls_active is back to 0');
    assert.equal(fdsEnd, fdsStart, 'the open fds return to their count after warm-up once the clients are gone');
    assert.ok(loopP99.length > 0, 'the event-loop delay was scraped');
    // The figure reported against the target is the one asserted: peaks under the same traffic, which the
    // collector's timing moves little. A leak keeps climbing from quarter to quarter; a heap at its working size does not.
    assert.ok(growthUnderTraffic < 10, `RSS grew ${growthUnderTraffic.toFixed(1)} % under traffic, first quarter → last quarter peak (${quarters.map((b) => (b / MB).toFixed(1)).join(' / ')} MB); the target is < 10 %`);
    // Idle figures also move with when the collector last ran (18 % seen with nothing leaking): only a doubling fails here.
    assert.ok(growth < 100, `RSS grew ${growth.toFixed(1)} % from idle after warm-up to idle at the end`);
  });
});
