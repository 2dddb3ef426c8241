// A burst of new HTTP/1.1 calls through the real `sidecar/bin/rpcscope` to a
// real node:http app. HTTP/1.1 carries one call per connection at a time, and
// the sidecar used to open a connection per call at once: 1,000 calls were
// 1,000 connects, past the app's accept queue (Node's listen backlog, 511), and
// the calls whose SYN was dropped waited for the kernel's retries, some past
// --connect-timeout. The sidecar now makes at most --upstream-max-connecting
// connections to an endpoint at once and has the other calls wait for one, or
// for a keep-alive socket to come free; past --upstream-max-connections and
// --upstream-max-pending a call is answered 503 and counted.
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { settledScrape } from '../support/admin-scrape.ts';
import { sum } from '../support/metrics-text.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const CALLS = 1000;

/** A node:http app on its default listen backlog; it answers each call after `holdMs`, or when `release()` is called. */
async function startApp(holdMs: number): Promise<{ url: string; peak: () => number; open: () => number; release: () => void; close: () => void }> {
  let open = 0;
  let peak = 0;
  let held: (() => void)[] | undefined = holdMs < 0 ? [] : undefined;
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const answer = (): void => void res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.url} ${body}`);
      if (held) held.push(answer);
      else setTimeout(answer, holdMs);
    });
  });
  server.on('connection', (socket) => {
    peak = Math.max(peak, ++open);
    socket.once('close', () => open--);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    peak: () => peak,
    open: () => open,
    release: () => {
      const waiting = held ?? [];
      held = undefined;
      for (const answer of waiting) answer();
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** One call on a connection of its own: its status and whether the answer is its own. */
function call(base: string, i: number, agent: http.Agent): Promise<{ status: number; own: boolean; text: string }> {
  return new Promise((resolve) => {
    const body = `call-${i}`;
    const req = http.request(`${base}/burst/${i}`, { method: 'POST', agent, headers: { 'content-type': 'text/plain', 'content-length': body.length } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, own: text === `/burst/${i} ${body}`, text }));
    });
    req.on('error', (err) => resolve({ status: 0, own: false, text: err.message }));
    req.end(body);
  });
}

describe('rpcscope binary and a burst of new HTTP/1.1 calls to an HTTP/1.1 app', { timeout: 300_000 }, () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp(50);
    // The defaults: --upstream-max-connections 1024, --upstream-max-connecting 128, --upstream-max-pending 1024, --connect-timeout 5s.
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc?.stop();
    app?.close();
  });

  it(`completes ${CALLS.toLocaleString('en')} calls sent at once, each on a new connection, counts each once, and connects a slice at a time`, async () => {
    // Every call on a client connection of its own, all written at once.
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const t0 = performance.now();
    const results = await Promise.all(Array.from({ length: CALLS }, (_, i) => call(sc.url, i, agent)));
    const wallMs = Math.round(performance.now() - t0);
    agent.destroy();
    const failed = results.map((r, i) => ({ ...r, i })).filter((r) => r.status !== 200 || !r.own);
    const samples = await settledScrape(sc.adminUrl);
    const counted = {
      ok: sum(samples, 'rpcscope_calls_total', { protocol: 'rest', code: 'OK' }),
      all: sum(samples, 'rpcscope_calls_total'),
      active: sum(samples, 'rpcscope_calls_active'),
      overflow: sum(samples, 'rpcscope_upstream_queue_overflow_total'),
    };
    const scenario = `${CALLS.toLocaleString('en')} new HTTP/1.1 calls at once to a node:http app (backlog 511, 50 ms per call)`;
    reportFigure({ section: 'load', scenario, name: 'peak upstream connections (at the app)', value: app.peak() });
    reportFigure({ section: 'load', scenario, name: 'calls failed', value: failed.length });
    reportFigure({ section: 'load', scenario, name: 'wall time', value: wallMs, unit: 'ms' });

    assert.deepEqual(failed.slice(0, 5).map((f) => `call ${f.i}: ${f.status} ${f.text.slice(0, 100)}`), [], `${failed.length} of ${CALLS} calls failed`);
    assert.deepEqual(counted, { ok: CALLS, all: CALLS, active: 0, overflow: 0 }, 'calls_total counts every call once, all OK; none active, none overflowed');
    assert.ok(app.peak() <= 1024, `at most --upstream-max-connections connections to the app (${app.peak()})`);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
  });
});

describe('rpcscope binary and HTTP/1.1 calls past --upstream-max-connections and --upstream-max-pending', () => {
  const MAX = 10;
  const PENDING = 20;
  const SENT = 50;
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;
  before(async () => {
    // The app holds every call until released: the first MAX hold every connection the sidecar may open.
    app = await startApp(-1);
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1', '--upstream-max-connections', String(MAX), '--upstream-max-pending', String(PENDING)]);
  });
  after(async () => {
    await sc?.stop();
    app?.close();
  });

  it(`holds ${MAX} calls on ${MAX} connections, queues ${PENDING}, answers the rest 503 at once and counts them; the queued ones then reuse the connections`, async () => {
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const results: { status: number; own: boolean; text: string }[] = [];
    const all = Promise.all(Array.from({ length: SENT }, (_, i) => call(sc.url, i, agent).then((r) => void results.push(r))));
    // Those past the queue are answered without waiting for the app.
    while (results.length < SENT - MAX - PENDING) await new Promise((r) => setTimeout(r, 20));
    assert.equal(app.open(), MAX, `${MAX} connections to the app, the calls past them waiting`);
    const refused = results.filter((r) => r.status === 503);
    assert.equal(refused.length, SENT - MAX - PENDING, `answered: ${results.map((r) => r.status).join(' ')}`);
    assert.ok(refused.every((r) => r.text.includes('--upstream-max-pending')), `the answer says why: ${refused[0]?.text}`);
    app.release();
    await all;
    agent.destroy();
    const samples = await settledScrape(sc.adminUrl);
    assert.equal(results.filter((r) => r.status === 200 && r.own).length, MAX + PENDING, 'every call admitted completes with its own answer');
    assert.equal(app.peak(), MAX, 'the queued calls went over the same connections, freed');
    assert.equal(sum(samples, 'rpcscope_upstream_queue_overflow_total'), SENT - MAX - PENDING);
    assert.equal(sum(samples, 'rpcscope_calls_total', { code: 'OK' }), MAX + PENDING);
    assert.equal(sum(samples, 'rpcscope_calls_total', { code: 'UNAVAILABLE' }), SENT - MAX - PENDING);
    assert.equal(sum(samples, 'rpcscope_calls_active'), 0, 'calls_active is back to 0');
    reportFigure({ section: 'bad-input', scenario: `${SENT} HTTP/1.1 calls, --upstream-max-connections ${MAX}, --upstream-max-pending ${PENDING}`, name: 'answered', value: `${MAX + PENDING} 200 (${MAX} connections), ${SENT - MAX - PENDING} 503` });
  });
});

describe('rpcscope binary and an HTTP/1.1 caller that goes away while its call waits for a connection', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp(-1);
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1', '--upstream-max-connections', '1', '--upstream-max-pending', '1']);
  });
  after(async () => {
    await sc?.stop();
    app?.close();
  });

  it('gives its place in the queue to the next call, which is served; nothing overflows or stays active', async () => {
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const held = call(sc.url, 1, agent);
    while (app.open() < 1) await new Promise((r) => setTimeout(r, 20));
    // The second call waits for the one connection; its caller then goes away.
    const leaving = http.request(`${sc.url}/burst/2`, { method: 'POST', agent, headers: { 'content-length': 1 } });
    leaving.on('error', () => {});
    leaving.end('x');
    await new Promise((r) => setTimeout(r, 300));
    leaving.destroy();
    await new Promise((r) => setTimeout(r, 300));
    const third = call(sc.url, 3, agent);
    await new Promise((r) => setTimeout(r, 300));
    app.release();
    const [first, last] = await Promise.all([held, third]);
    agent.destroy();
    assert.deepEqual([first.status, first.own, last.status, last.own], [200, true, 200, true], `answers: ${first.text} / ${last.text}`);
    const samples = await settledScrape(sc.adminUrl);
    assert.equal(sum(samples, 'rpcscope_upstream_queue_overflow_total'), 0, 'the departed call held no place');
    assert.equal(app.peak(), 1, 'one connection to the app, reused');
    assert.equal(sum(samples, 'rpcscope_calls_total', { code: 'OK' }), 2);
    assert.equal(sum(samples, 'rpcscope_calls_total'), 3, 'the departed call is counted too, once');
    assert.equal(sum(samples, 'rpcscope_calls_active'), 0, 'calls_active is back to 0');
  });
});

describe('rpcscope binary and HTTP/1.1 connections that take long to be made', () => {
  const CONNECTING = 3;
  const SENT = 10;
  let server: net.Server;
  let seen = 0;
  /** When the upstream accepted each connection, ms. */
  const accepted: number[] = [];
  let sc: SidecarProcess;
  before(async () => {
    // An https:// upstream that accepts TCP and never answers the TLS handshake: every connection stays being made.
    server = net.createServer((socket) => {
      seen++;
      accepted.push(performance.now());
      socket.on('error', () => {});
      // Read (and drop the ClientHello): a socket not read never learns the sidecar closed it.
      socket.resume();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    sc = await startSidecarProcess(['--upstream', `https://127.0.0.1:${port}`, '--upstream-protocol', 'http1', '--upstream-max-connecting', String(CONNECTING), '--connect-timeout', '1s']);
  });
  after(async () => {
    await sc?.stop();
    server?.close();
  });

  it(`makes at most ${CONNECTING} connections at once; the calls waiting behind them get connections of their own, each with the whole --connect-timeout`, async () => {
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const results = await Promise.all(Array.from({ length: SENT }, (_, i) => call(sc.url, i, agent)));
    agent.destroy();
    // Every call waited its turn and then timed out connecting on a connection of its own:
    // had the wait counted, the calls queued behind the first ones would have failed unconnected.
    assert.deepEqual(results.map((r) => r.status), Array.from({ length: SENT }, () => 503), results.map((r) => r.text.slice(0, 80)).join(' | '));
    assert.ok(results.every((r) => r.text.includes('RPCSCOPE_ERR_CONNECT_TIMEOUT')), `each timed out connecting: ${results[0]?.text}`);
    assert.equal(seen, SENT, 'one connection per call');
    // Connections come in waves of CONNECTING, one --connect-timeout (1 s) apart. Counted
    // by when the upstream accepted them, not by how many it holds open: the close of a
    // timed-out connection may reach the upstream after the connection replacing it.
    const busiest = Math.max(...accepted.map((t) => accepted.filter((u) => u >= t && u < t + 500).length));
    assert.equal(busiest, CONNECTING, `at most --upstream-max-connecting ${CONNECTING} made within half a connect timeout: ${accepted.map((t) => Math.round(t - accepted[0]!)).join(', ')} ms`);
    const samples = await settledScrape(sc.adminUrl);
    assert.equal(sum(samples, 'rpcscope_calls_total', { code: 'UNAVAILABLE' }), SENT);
    assert.equal(sum(samples, 'rpcscope_upstream_queue_overflow_total'), 0);
    assert.equal(sum(samples, 'rpcscope_calls_active'), 0, 'calls_active is back to 0');
  });
});
