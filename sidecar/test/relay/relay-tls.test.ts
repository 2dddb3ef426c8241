// The relay over TLS on both sides: a client on the proxy port with ALPN h2,
// an https:// upstream reached with ALPN h2 and verified against --upstream-ca;
// and an upstream that will not speak HTTP/2 over TLS, whose callers get
// UNAVAILABLE rather than a connection that hangs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { makeSelfSignedCert, type TestCert } from '../support/certs.ts';
import { h2Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

const MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 0, 3]), Buffer.from('abc')]);

describe('relay over TLS', () => {
  let cert: TestCert;
  let upstream: http2.Http2SecureServer;
  let h1Only: https.Server;
  let sc: TestSidecar;
  let scToH1: TestSidecar;
  before(async () => {
    cert = makeSelfSignedCert();
    const key = readFileSync(cert.keyFile);
    upstream = http2.createSecureServer({ cert: cert.cert, key });
    upstream.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      stream.resume();
      stream.on('end', () => {
        stream.respond({ ':status': 200, 'content-type': String(headers['content-type'] ?? 'text/plain') }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(MESSAGE);
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    h1Only = https.createServer({ cert: cert.cert, key }, (_req, res) => res.end('http/1.1 only'));
    await new Promise<void>((r) => h1Only.listen(0, '127.0.0.1', r));
    const tlsArgs = ['--tls-cert', cert.certFile, '--tls-key', cert.keyFile, '--upstream-ca', cert.certFile, '--data-plane', 'relay'];
    sc = await startTestSidecar(`https://localhost:${(upstream.address() as AddressInfo).port}`, tlsArgs);
    // Said to speak HTTP/2 (under auto, an upstream learned to speak only HTTP/1.1 keeps the terminating path).
    scToH1 = await startTestSidecar(`https://localhost:${(h1Only.address() as AddressInfo).port}`, [...tlsArgs, '--upstream-protocol', 'http2']);
  });
  after(async () => {
    await sc.stop();
    await scToH1.stop();
    await new Promise((r) => upstream.close(r));
    await new Promise((r) => h1Only.close(r));
  });

  it('relays a gRPC call from a TLS client to a TLS upstream and records it', async () => {
    const res = await h2Request(`https://localhost:${sc.port}`, '/bench.v1.Bench/Unary', {
      method: 'POST',
      headers: { 'content-type': 'application/grpc', te: 'trailers' },
      body: MESSAGE,
      connect: { ca: cert.cert },
    });
    assert.equal(res.status, 200);
    assert.equal(res.trailers['grpc-status'], '0');
    const rec = await sc.recorder.waitForCall((c) => c.path === '/bench.v1.Bench/Unary');
    assert.deepEqual([rec.protocol, rec.grpcStatus, rec.requestMessages, rec.responseMessages, rec.httpVersion], ['grpc', 0, 1, 1, '2']);
    const upstreams = sc.recorder.opened.filter((c) => c.side === 'upstream');
    assert.equal(upstreams.length, 1);
    assert.equal(upstreams[0]!.peer, `localhost:${(upstream.address() as AddressInfo).port}`);
  });

  it('answers UNAVAILABLE when the upstream does not agree to h2', async () => {
    const client = new grpc.Client(`localhost:${scToH1.port}`, grpc.credentials.createSsl(cert.cert));
    const code = await new Promise<number>((resolve) => {
      client.makeUnaryRequest('/bench.v1.Bench/Unary', (b: Buffer) => b, (b: Buffer) => b, Buffer.from('x'), { deadline: Date.now() + 5000 }, (err) => resolve(err?.code ?? 0));
    });
    client.close();
    assert.equal(code, grpc.status.UNAVAILABLE);
    const rec = await scToH1.recorder.waitForCall((c) => c.path === '/bench.v1.Bench/Unary');
    assert.equal(rec.upstreamUnreachable, true);
  });
});
