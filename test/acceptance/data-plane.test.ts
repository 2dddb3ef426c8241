// Acceptance: the data plane as a user meets it — `sidecar/bin/rpcscope` started
// with --listen/--upstream/--admin, spoken to with raw HTTP/2 and HTTP/1.1.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startConnectEcho, startGrpcJsEcho, type Upstream } from '@rpcscope/demo';
import { scrape } from '../support/admin-scrape.ts';
import { eventually } from '../support/eventually.ts';
import { sum } from '../support/metrics-text.ts';
import { RPCSCOPE_BIN, startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** One gRPC length-prefixed message with an empty (all-default) protobuf body. */
const EMPTY_MESSAGE = Buffer.from([0, 0, 0, 0, 0]);

/** A raw HTTP/1.1 exchange on a socket of its own: bytes out, bytes back until close. */
function rawH1(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('end', () => resolve(out));
    sock.on('error', reject);
    sock.write(request);
  });
}

interface H2Result {
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders | undefined;
  body: Buffer;
}

function rawH2(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<H2Result> {
  return new Promise((resolve, reject) => {
    const req = session.request(headers, { endStream: !body });
    const chunks: Buffer[] = [];
    let head: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders | undefined;
    req.on('response', (h) => (head = h));
    req.on('trailers', (t) => (trailers = t));
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => resolve({ headers: head, trailers, body: Buffer.concat(chunks) }));
    req.on('error', reject);
    if (body) req.end(body);
  });
}

/** How a new connection to `port` fares: `connected` (closed again at once) or the error's code. */
function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.on('connect', () => {
      sock.destroy();
      resolve('connected');
    });
    sock.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/**
 * Resolves once the sidecar has `n` calls in flight: a signal sent before it has
 * read a call's request would have that call refused rather than drained.
 */
async function callsInFlight(sc: SidecarProcess, n: number): Promise<void> {
  await eventually(async () => sum(await scrape(sc.adminUrl), 'rpcscope_calls_active') === n, `${n} calls in flight`);
}

describe('rpcscope binary: the data plane', () => {
  let upstream: Upstream;
  let sc: SidecarProcess;
  before(async () => {
    upstream = await startConnectEcho();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--drain-timeout', '10s']);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  it('forwards gRPC over raw HTTP/2 with its trailers intact', async () => {
    const session = http2.connect(sc.url);
    const res = await rawH2(session, { ':method': 'POST', ':path': '/echo.v1.EchoService/Echo', 'content-type': 'application/grpc', te: 'trailers' }, EMPTY_MESSAGE);
    session.close();
    assert.equal(res.headers[':status'], 200);
    assert.match(String(res.headers['content-type']), /^application\/grpc(\+proto)?$/);
    assert.equal(res.trailers?.['grpc-status'], '0');
    assert.equal(res.body[0], 0);
    assert.equal(res.body.readUInt32BE(1), res.body.length - 5);
  });

  it('forwards REST over raw HTTP/1.1, hop-by-hop headers removed', async () => {
    const text = await rawH1(sc.port, 'GET /v1/echo/abc?q=1 HTTP/1.1\r\nHost: orders.local\r\nConnection: close, X-Secret\r\nX-Secret: do-not-forward\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    assert.deepEqual(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { id: 'abc', query: { q: '1' } });
  });

  it('forwards Connect and gRPC-Web over raw HTTP/1.1', async () => {
    const connect = await rawH1(sc.port, 'POST /echo.v1.EchoService/Echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nConnect-Protocol-Version: 1\r\nContent-Length: 19\r\n\r\n{"message":"hello"}');
    assert.match(connect, /^HTTP\/1\.1 200 /);
    assert.equal(JSON.parse(connect.slice(connect.indexOf('\r\n\r\n') + 4)).message, 'hello');
    const web = await rawH1(sc.port, 'POST /echo.v1.EchoService/Echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/grpc-web+proto\r\nX-Grpc-Web: 1\r\nContent-Length: 5\r\n\r\n\x00\x00\x00\x00\x00');
    assert.match(web, /^HTTP\/1\.1 200 /);
    assert.match(web, /grpc-status:\s*0/);
  });

  it('answers health and readiness on the admin port', async () => {
    assert.equal((await fetch(`${sc.adminUrl}/healthz`)).status, 200);
    assert.equal((await fetch(`${sc.adminUrl}/readyz`)).status, 200);
  });
});

describe('rpcscope binary: --grpc-upstream', () => {
  let rest: Upstream;
  let grpcOnly: Upstream;
  let sc: SidecarProcess;
  before(async () => {
    rest = await startConnectEcho();
    grpcOnly = await startGrpcJsEcho();
    sc = await startSidecarProcess(['--upstream', rest.url, '--grpc-upstream', grpcOnly.url]);
  });
  after(async () => {
    await sc.stop();
    await Promise.all([rest.close(), grpcOnly.close()]);
  });

  it('sends gRPC calls to the gRPC upstream, with a trailers-only error intact', async () => {
    const session = http2.connect(sc.url);
    // grpc-js answers an unknown method with a single HEADERS frame carrying the status.
    const res = await rawH2(session, { ':method': 'POST', ':path': '/echo.v1.EchoService/NoSuchMethod', 'content-type': 'application/grpc', te: 'trailers' }, EMPTY_MESSAGE);
    session.close();
    assert.equal(res.headers[':status'], 200);
    assert.equal(res.headers['grpc-status'], '12');
    assert.equal(res.trailers, undefined);
    assert.equal(res.body.length, 0);
  });

  it('sends REST calls to --upstream', async () => {
    const text = await rawH1(sc.port, 'GET /v1/echo/9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.match(text, /^HTTP\/1\.1 200 /);
  });
});

describe('rpcscope binary: SIGTERM drains without losing a call', () => {
  it('sends GOAWAY, turns unready, finishes every call in flight, refuses new connections, exits 0', async () => {
    const upstream = await startConnectEcho();
    const sc = await startSidecarProcess(['--upstream', upstream.url, '--drain-timeout', '10s']);
    try {
      const session = http2.connect(sc.url);
      let goaway: number | undefined;
      session.on('goaway', (code) => (goaway = code));
      session.on('error', () => {});
      // Calls that outlast what the drain is checked for below by seconds, on any machine.
      const slowMs = 4000;
      const h2Calls = [0, 1, 2].map(() => rawH2(session, { ':path': `/v1/slow?ms=${slowMs}` }));
      const h1Call = rawH1(sc.port, `GET /v1/slow?ms=${slowMs} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await callsInFlight(sc, 4);
      sc.proc.kill('SIGTERM');

      // Each waited for rather than read after a fixed 200 ms: the drain's steps, as clients see them.
      assert.equal(await eventually(() => goaway, 'a GOAWAY to the HTTP/2 client'), http2.constants.NGHTTP2_NO_ERROR, 'HTTP/2 client told to go away');
      await eventually(async () => (await fetch(`${sc.adminUrl}/readyz`)).status === 503, '/readyz answering 503');
      await eventually(async () => {
        const outcome = await connectOutcome(sc.port);
        if (outcome !== 'ECONNREFUSED') throw new Error(`a new connection: ${outcome}`);
        return outcome;
      }, 'new connections refused');
      assert.equal(sc.proc.exitCode, null, 'still draining the calls in flight');

      const results = await Promise.all(h2Calls);
      for (const r of results) assert.deepEqual([r.headers[':status'], JSON.parse(r.body.toString())], [200, { slept_ms: slowMs }]);
      const h1 = await h1Call;
      assert.match(h1, /^HTTP\/1\.1 200 /);
      // A call still answered during the drain tells the HTTP/1.1 client to close.
      assert.match(h1, /\r\nConnection: close\r\n/i);
      assert.equal(await sc.exited, 0);
    } finally {
      await sc.stop();
      await upstream.close();
    }
  });

  it('ends what is left at the drain timeout and still exits 0', async () => {
    const upstream = await startConnectEcho();
    const sc = await startSidecarProcess(['--upstream', upstream.url, '--drain-timeout', '300ms']);
    try {
      const session = http2.connect(sc.url);
      session.on('error', () => {});
      // A call the upstream holds for a minute: only the drain timeout can end it in time.
      const req = session.request({ ':path': '/v1/slow?ms=60000' });
      req.on('error', () => {});
      await callsInFlight(sc, 1);
      const t0 = Date.now();
      sc.proc.kill('SIGTERM');
      assert.equal(await sc.exited, 0);
      // Far from the call's minute, and far above the 300 ms timeout plus a busy machine's delays.
      assert.ok(Date.now() - t0 < 30_000, `exited ${Date.now() - t0} ms after SIGTERM`);
      assert.match(sc.log(), /drain timeout: calls still in flight were ended","unfinished":1/);
    } finally {
      await upstream.close();
    }
  });
});

describe('rpcscope binary: bad settings', () => {
  for (const [args, message] of [
    [['--upstream', 'http://127.0.0.1:1', '--listen', 'localhost'], /^rpcscope: --listen: invalid value "localhost": expected HOST:PORT/],
    [['--upstream', 'tcp://x'], /^rpcscope: --upstream: invalid value "tcp:\/\/x"/],
    [['--mode', 'outbound'], /^rpcscope: --upstream: missing/],
  ] as const) {
    it(`stops with exit code 2 and one line for ${args.join(' ')}`, () => {
      const r = spawnSync(RPCSCOPE_BIN, [...args], { encoding: 'utf8' });
      assert.equal(r.status, 2);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1);
    });
  }

  it('documents every flag in --help', () => {
    const r = spawnSync(RPCSCOPE_BIN, ['--help'], { encoding: 'utf8' });
    assert.equal(r.status, 0);
    for (const flag of ['--listen', '--upstream', '--grpc-upstream', '--admin', '--mode', '--tls-cert', '--tls-key', '--log-level', '--drain-timeout']) assert.ok(r.stdout.includes(flag), flag);
  });
});
