// Acceptance: the HTTP version toward the app is the one the app speaks. Every
// REST case, sent with curl over HTTP/1.1, h2c and TLS (ALPN h2) through the real
// binary to an HTTP/1.1-only app, an HTTP/2-only app and an app speaking both,
// gets the status and body the app gives directly. gRPC callers of an
// HTTP/1.1-only app get UNAVAILABLE naming the cause; Connect and gRPC-Web over
// HTTP/2 reach it as HTTP/1.1.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { createClient } from '@connectrpc/connect';
import { connectNodeAdapter, createConnectTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { EchoService, GrpcJsEchoClient, writeHead } from '@rpcscope/demo';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const run = promisify(execFile);
const BIG = 8 * 1024 * 1024;
const cert = makeSelfSignedCert();
const bigFile = join(tmpdir(), `rpcscope-big-${process.pid}.bin`);
const big = randomBytes(BIG);
writeFileSync(bigFile, big);

/** The app's answers depend on the request only, never on the HTTP version it came over. */
function handle(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void {
  const url = req.url ?? '/';
  const json = (status: number, body: unknown): void => {
    const text = JSON.stringify(body);
    writeHead(res, status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  if (req.method === 'GET' && url.startsWith('/v1/items/')) return json(200, { path: url });
  if (req.method === 'GET' && url === '/v1/cookies') return json(200, { cookie: req.headers.cookie ?? null });
  if (req.method === 'POST' && url === '/v1/echo') {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => json(200, { received: Buffer.concat(chunks).toString() }));
    return;
  }
  if (req.method === 'POST' && url === '/v1/digest') {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => {
      hash.update(c);
      bytes += c.length;
    });
    req.on('end', () => json(200, { bytes, sha256: hash.digest('hex') }));
    return;
  }
  if (req.method === 'GET' && url === '/v1/chunked') {
    // No length given: chunked over HTTP/1.1, DATA frames until END_STREAM over HTTP/2.
    writeHead(res, 200, { 'content-type': 'text/plain' });
    let n = 0;
    const tick = (): void => {
      if (n === 5) return void res.end('end\n');
      (res as http.ServerResponse).write(`part ${n++} ${'x'.repeat(10_000)}\n`);
      setTimeout(tick, 5);
    };
    return tick();
  }
  writeHead(res, 404, { 'content-type': 'text/plain' });
  res.end(`no route for ${req.method} ${url}\n`);
}

const APP_NAMES = ['an HTTP/1.1-only app (node:http)', 'an HTTP/2-only app (node:http2, h2c)', 'an app speaking both (node:http2 over TLS, allowHTTP1)'] as const;

interface App {
  name: string;
  url: string;
  /** curl flags that reach the app directly, over a version it speaks. */
  direct: string[];
  close(): void;
}

async function listening<S extends http.Server | http2.Http2Server | http2.Http2SecureServer>(server: S): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

async function startApps(): Promise<App[]> {
  const h1 = http.createServer(handle);
  const h2 = http2.createServer(handle);
  const dual = http2.createSecureServer({ cert: cert.cert, key: readFileSync(cert.keyFile), allowHTTP1: true }, handle);
  const [p1, p2, p3] = await Promise.all([listening(h1), listening(h2), listening(dual)]);
  return [
    { name: APP_NAMES[0], url: `http://127.0.0.1:${p1}`, direct: ['--http1.1'], close: () => h1.close() },
    { name: APP_NAMES[1], url: `http://127.0.0.1:${p2}`, direct: ['--http2-prior-knowledge'], close: () => h2.close() },
    { name: APP_NAMES[2], url: `https://127.0.0.1:${p3}`, direct: ['--http2', '-k'], close: () => dual.close() },
  ];
}

interface Answer {
  status: number;
  version: string;
  body: string;
}

async function curl(base: string, flags: string[], path: string, extra: string[] = []): Promise<Answer> {
  const { stdout } = await run('curl', ['-sS', '--max-time', '20', ...flags, ...extra, '-w', '\n%{http_code} %{http_version}', base + path], { maxBuffer: 32 * 1024 * 1024 });
  const cut = stdout.lastIndexOf('\n');
  const [status, version] = stdout.slice(cut + 1).split(' ');
  return { status: Number(status), version: version!, body: stdout.slice(0, cut) };
}

const CASES: { name: string; path: string; args: string[] }[] = [
  { name: 'GET', path: '/v1/items/42?x=1', args: [] },
  { name: 'POST with a body', path: '/v1/echo', args: ['-H', 'content-type: text/plain', '--data-binary', 'hello, upstream'] },
  { name: 'a large streamed body', path: '/v1/digest', args: ['-H', 'content-type: application/octet-stream', '--data-binary', `@${bigFile}`] },
  { name: 'a chunked response of unknown length', path: '/v1/chunked', args: [] },
  { name: 'repeated cookies', path: '/v1/cookies', args: ['-H', 'cookie: a=1', '-H', 'cookie: b=2'] },
  { name: 'a 404', path: '/v1/nowhere', args: [] },
];

// Each client: how curl reaches the sidecar, and the version it must have spoken.
const CLIENTS: { name: string; tls: boolean; flags: string[]; version: string }[] = [
  { name: 'HTTP/1.1', tls: false, flags: ['--http1.1'], version: '1.1' },
  { name: 'h2c', tls: false, flags: ['--http2-prior-knowledge'], version: '2' },
  { name: 'TLS h2', tls: true, flags: ['--http2', '-k'], version: '2' },
  { name: 'TLS HTTP/1.1', tls: true, flags: ['--http1.1', '-k'], version: '1.1' },
];

describe('rpcscope binary: HTTP versions toward the app', () => {
  let apps: App[];
  const sidecars = new Map<string, { plain: SidecarProcess; tls: SidecarProcess }>();
  before(async () => {
    apps = await startApps();
    await Promise.all(
      apps.map(async (app) => {
        const common = ['--upstream', app.url, '--upstream-ca', cert.certFile];
        const [plain, tls] = await Promise.all([startSidecarProcess(common), startSidecarProcess([...common, '--tls-cert', cert.certFile, '--tls-key', cert.keyFile])]);
        sidecars.set(app.name, { plain, tls });
      }),
    );
  });
  after(async () => {
    await Promise.all([...sidecars.values()].flatMap((s) => [s.plain.stop(), s.tls.stop()]));
    for (const app of apps) app.close();
  });

  APP_NAMES.forEach((appName, appIndex) => {
    describe(`to ${appName}`, () => {
      if (appIndex === 1) {
        it('the first HTTP/1.1 call teaches each sidecar that the app speaks only HTTP/2: one 503, then every call carried', async () => {
          const sc = sidecars.get(apps[appIndex]!.name)!;
          for (const [base, flags] of [[sc.plain.url, ['--http1.1']], [`https://localhost:${sc.tls.port}`, ['--http1.1', '-k']]] as const) {
            const first = await curl(base, [...flags], '/v1/items/1');
            assert.equal(first.status, 503, first.body);
            assert.match(first.body, /does not speak HTTP\/1\.1/);
            assert.equal((await curl(base, [...flags], '/v1/items/1')).status, 200);
          }
        });
      }
      for (const client of CLIENTS) {
        it(`from ${client.name} clients: every REST case answers as the app does directly`, async () => {
          const app = apps[appIndex]!;
          const sc = sidecars.get(app.name)!;
          const base = client.tls ? `https://localhost:${sc.tls.port}` : sc.plain.url;
          for (const c of CASES) {
            const direct = await curl(app.url, app.direct, c.path, c.args);
            const via = await curl(base, client.flags, c.path, c.args);
            assert.equal(via.version, client.version, `${c.name}: curl spoke HTTP/${via.version}`);
            assert.deepEqual({ status: via.status, body: via.body }, { status: direct.status, body: direct.body }, c.name);
          }
        });
      }
    });
  });

  it('carries the cases the app itself checks: cookies joined, the big body whole', async () => {
    const sc = sidecars.get(apps[0]!.name)!;
    const cookies = await curl(sc.plain.url, ['--http2-prior-knowledge'], '/v1/cookies', ['-H', 'cookie: a=1', '-H', 'cookie: b=2']);
    assert.deepEqual(JSON.parse(cookies.body), { cookie: 'a=1; b=2' });
    const digest = await curl(sc.plain.url, ['--http2-prior-knowledge'], '/v1/digest', ['--data-binary', `@${bigFile}`]);
    assert.deepEqual(JSON.parse(digest.body), { bytes: BIG, sha256: createHash('sha256').update(big).digest('hex') });
  });

  it('speaks to each app in its own version, as /metrics shows', async () => {
    const metrics = async (sc: SidecarProcess): Promise<string> => (await fetch(`${sc.adminUrl}/metrics`)).text();
    // HTTP/2 callers of the HTTP/1.1-only app: the sidecar's side toward it is HTTP/1.1.
    const h1App = await metrics(sidecars.get(apps[0]!.name)!.plain);
    assert.match(h1App, /rpcscope_connections_active\{side="upstream",http_version="1\.1"\} [1-9]/);
    assert.doesNotMatch(h1App, /rpcscope_connections_active\{side="upstream",http_version="2"\} [1-9]/);
    assert.doesNotMatch(h1App, /code="INTERNAL"/);
    // HTTP/1.1 callers of the HTTP/2-only app: HTTP/2 toward it, and nothing else.
    const h2App = await metrics(sidecars.get(apps[1]!.name)!.plain);
    assert.match(h2App, /rpcscope_connections_active\{side="upstream",http_version="2"\} [1-9]/);
    assert.doesNotMatch(h2App, /rpcscope_connections_active\{side="upstream",http_version="1\.1"\} [1-9]/);
  });
});

describe('rpcscope binary: RPC callers of an HTTP/1.1-only app', () => {
  let app: http.Server;
  let sc: SidecarProcess;
  before(async () => {
    // Connect and gRPC-Web work over HTTP/1.1; connect-node serves them on a plain node:http server.
    app = http.createServer(connectNodeAdapter({ routes: (router) => router.service(EchoService, { echo: (req) => ({ message: req.message }) }) }));
    const port = await listening(app);
    sc = await startSidecarProcess(['--upstream', `http://127.0.0.1:${port}`]);
  });
  after(async () => {
    await sc.stop();
    app.close();
  });

  it('gives gRPC callers UNAVAILABLE naming the cause, counted as UNAVAILABLE and logged once', async () => {
    const client = new GrpcJsEchoClient(`127.0.0.1:${sc.port}`, grpc.credentials.createInsecure());
    const call = (): Promise<grpc.ServiceError> =>
      new Promise((resolve, reject) =>
        (client as unknown as { Echo: (r: object, cb: (e: grpc.ServiceError | null) => void) => void }).Echo({ message: 'hi' }, (err) => (err ? resolve(err) : reject(new Error('the call succeeded')))),
      );
    const errors = [await call(), await call()];
    client.close();
    for (const err of errors) {
      assert.equal(err.code, grpc.status.UNAVAILABLE);
      assert.match(err.details, /the upstream speaks only HTTP\/1\.1; gRPC needs HTTP\/2 end to end/);
    }
    const metrics = await (await fetch(`${sc.adminUrl}/metrics`)).text();
    assert.match(metrics, /rpcscope_calls_total\{direction="inbound",protocol="grpc",encoding="proto",method="echo\.v1\.EchoService\/Echo",operation="echo\.v1\.EchoService\/Echo",code="UNAVAILABLE",http_status="200"\} 2/);
    assert.equal(sc.log().split('\n').filter((l) => l.includes('gRPC needs HTTP/2 end to end')).length, 1);
  });

  for (const [name, transport] of [
    ['Connect unary', () => createConnectTransport({ baseUrl: sc.url, httpVersion: '2' })],
    ['gRPC-Web', () => createGrpcWebTransport({ baseUrl: sc.url, httpVersion: '2' })],
  ] as const) {
    it(`carries ${name} over HTTP/2 to it as HTTP/1.1`, async () => {
      const res = await createClient(EchoService, transport()).echo({ message: `via ${name}` });
      assert.equal(res.message, `via ${name}`);
    });
  }
});
