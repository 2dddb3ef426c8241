// The HTTP/1.1 relay (--http1-data-plane relay) toward an https:// app: each
// client connection is relayed over a TLS connection of its own, verified
// against --upstream-ca and agreed on HTTP/1.1 by ALPN (RFC 7301). An app whose
// certificate the CA does not sign is never sent a call: the caller is answered
// 503 saying why, and rpcscope goes on serving. An app that speaks HTTP/2 only
// is never sent HTTP/1.1 bytes.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { parseExposition, sum } from '@rpcscope/demo/metrics-text';
import { startSidecarProcess, type SidecarProcess } from '@rpcscope/demo/sidecar-process';
import { makeSelfSignedCert, type TestCert } from '../support/certs.ts';
import { RawClient } from '../support/raw-h1-client.ts';

const RELAY = ['--http1-data-plane', 'relay'];

async function metric(sc: SidecarProcess, name: string, where: Record<string, string> = {}): Promise<number> {
  return sum(parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text()), name, where);
}

/** The calls' status and body, sent one after another on one client connection. */
async function calls(sc: SidecarProcess, ...requests: [method: string, bytes: string][]): Promise<string[]> {
  const client = new RawClient(sc.port);
  const out: string[] = [];
  try {
    for (const [method, bytes] of requests) for (const a of await client.send(bytes, [method])) out.push(`${a.status} ${a.body.toString()}`);
  } finally {
    client.close();
  }
  return out;
}

describe('the HTTP/1.1 relay toward an https:// app', () => {
  let cert: TestCert;
  let other: TestCert;
  let app: https.Server;
  let h2Only: http2.Http2SecureServer;
  /** What the app read: `METHOD /path` and the ALPN protocol of the connection each came on. */
  const seen: string[] = [];
  /** Each call's header lines as the app read them. */
  const heads: string[][] = [];
  /** TLS connections the app accepted. */
  let tlsConnections = 0;
  let sc: SidecarProcess;
  let wrongCa: SidecarProcess;
  let toH2Only: SidecarProcess;
  let toH2OnlyAuto: SidecarProcess;
  before(async () => {
    cert = makeSelfSignedCert();
    other = makeSelfSignedCert();
    const key = readFileSync(cert.keyFile);
    app = https.createServer({ cert: cert.cert, key, ALPNProtocols: ['http/1.1'] }, (req, res) => {
      seen.push(`${req.method} ${req.url} ${(req.socket as tls.TLSSocket).alpnProtocol}`);
      heads.push(req.rawHeaders);
      const parts: Buffer[] = [];
      req.on('data', (d: Buffer) => parts.push(d));
      req.on('end', () => res.end(`${req.method} ${req.url} ${Buffer.concat(parts).toString()}`.trim()));
    });
    app.on('secureConnection', () => tlsConnections++);
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
    h2Only = http2.createSecureServer({ cert: cert.cert, key });
    h2Only.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200 });
        stream.end(`h2 ${String(headers[':path'])}`);
      });
    });
    await new Promise<void>((r) => h2Only.listen(0, '127.0.0.1', r));
    const appUrl = `https://localhost:${(app.address() as AddressInfo).port}`;
    const h2Url = `https://localhost:${(h2Only.address() as AddressInfo).port}`;
    sc = await startSidecarProcess(['--upstream', appUrl, '--upstream-ca', cert.certFile, ...RELAY, '--upstream-protocol', 'http1']);
    wrongCa = await startSidecarProcess(['--upstream', appUrl, '--upstream-ca', other.certFile, ...RELAY, '--upstream-protocol', 'http1']);
    toH2Only = await startSidecarProcess(['--upstream', h2Url, '--upstream-ca', cert.certFile, ...RELAY, '--upstream-protocol', 'http1']);
    toH2OnlyAuto = await startSidecarProcess(['--upstream', h2Url, '--upstream-ca', cert.certFile, ...RELAY]);
  });
  after(async () => {
    await Promise.all([sc, wrongCa, toH2Only, toH2OnlyAuto].map((s) => s?.stop()));
    app?.closeAllConnections();
    app?.close();
    h2Only?.close();
  });

  it('relays calls over TLS with ALPN http/1.1, one connection for the client connection, and counts them', async () => {
    const post = 'POST /tls/b HTTP/1.1\r\nHost: app\r\nContent-Length: 5\r\n\r\nhello';
    assert.deepEqual(await calls(sc, ['GET', 'GET /tls/a HTTP/1.1\r\nHost: app\r\nX-Mine: kept\r\n\r\n'], ['POST', post]), ['200 GET /tls/a', '200 POST /tls/b hello']);
    assert.deepEqual(seen, ['GET /tls/a http/1.1', 'POST /tls/b http/1.1']);
    assert.deepEqual(heads[0], ['Host', 'app', 'X-Mine', 'kept'], 'the head reaches the app as sent, as relayed bytes');
    assert.equal(await metric(sc, 'rpcscope_calls_total', { code: 'OK' }), 2);
    assert.equal(tlsConnections, 1, 'one TLS connection to the app for the client connection');
  });

  it('answers 503 when the app’s certificate is not signed by --upstream-ca, sends it nothing, and goes on serving', async () => {
    const before = seen.length;
    const answers = await calls(wrongCa, ['GET', 'GET /tls/wrong HTTP/1.1\r\nHost: app\r\n\r\n']);
    const again = await calls(wrongCa, ['GET', 'GET /tls/again HTTP/1.1\r\nHost: app\r\n\r\n']);
    for (const a of [...answers, ...again]) assert.match(a, /^503 rpcscope: upstream unavailable: DEPTH_ZERO_SELF_SIGNED_CERT/, 'the answer names the certificate error');
    assert.equal(seen.length, before, 'the app read no call');
    assert.equal(await metric(wrongCa, 'rpcscope_calls_total', { code: 'UNAVAILABLE' }), 2);
    assert.match(wrongCa.log(), /cannot connect to upstream/);
    assert.equal(wrongCa.proc.exitCode, null, 'rpcscope is running');
  });

  it('sends an HTTP/2-only app no HTTP/1.1 bytes: 503 under --upstream-protocol http1, its calls translated under auto', async () => {
    const [refused] = await calls(toH2Only, ['GET', 'GET /h2/a HTTP/1.1\r\nHost: app\r\n\r\n']);
    assert.match(refused!, /^503 rpcscope: upstream unavailable: RPCSCOPE_ERR_ALPN_NOT_HTTP1: the upstream refused HTTP\/1.1 by ALPN/, refused);
    assert.equal(toH2Only.proc.exitCode, null, 'rpcscope is running');
    assert.deepEqual(await calls(toH2OnlyAuto, ['GET', 'GET /h2/b HTTP/1.1\r\nHost: app\r\n\r\n']), ['200 h2 /h2/b']);
  });
});
