// TLS on the proxy port: ALPN picks HTTP/2 or HTTP/1.1 on the same port, and
// gRPC works over it.
import assert from 'node:assert/strict';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoResponseObject, type Upstream } from '@rpcscope/demo';
import { makeSelfSignedCert, type TestCert } from '../support/certs.ts';
import { h2Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

describe('TLS on the proxy port', () => {
  let upstream: Upstream;
  let sc: TestSidecar;
  let cert: TestCert;
  before(async () => {
    cert = makeSelfSignedCert();
    upstream = await startConnectEcho();
    sc = await startTestSidecar(upstream.url, ['--tls-cert', cert.certFile, '--tls-key', cert.keyFile]);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  it('serves HTTP/2 to clients that offer h2', async () => {
    const since = sc.recorder.started.length;
    const res = await h2Request(`https://localhost:${sc.port}`, '/v1/echo/42?x=1', { connect: { ca: cert.cert } });
    assert.equal(res.status, 200);
    assert.deepEqual(JSON.parse(res.text), { id: '42', query: { x: '1' } });
    const rec = await sc.recorder.waitForCall((c) => c.path === '/v1/echo/42', { since });
    assert.equal(rec.httpVersion, '2');
  });

  it('serves HTTP/1.1 to clients that offer only http/1.1', async () => {
    const since = sc.recorder.started.length;
    const { status, alpn } = await new Promise<{ status: number; alpn: string | false | null }>((resolve, reject) => {
      const agent = new https.Agent({ ca: cert.cert, ALPNProtocols: ['http/1.1'] });
      const req = https.get(`https://localhost:${sc.port}/v1/echo/7`, { agent }, (res) => {
        res.resume();
        res.on('end', () => {
          agent.destroy();
          resolve({ status: res.statusCode!, alpn: (res.socket as TLSSocket).alpnProtocol });
        });
      });
      req.on('error', reject);
    });
    assert.equal(status, 200);
    assert.equal(alpn, 'http/1.1');
    const rec = await sc.recorder.waitForCall((c) => c.path === '/v1/echo/7', { since });
    assert.equal(rec.httpVersion, '1.1');
  });

  it('carries gRPC over TLS', async () => {
    const client = new GrpcJsEchoClient(`localhost:${sc.port}`, grpc.credentials.createSsl(cert.cert));
    const res = await new Promise<EchoResponseObject>((resolve, reject) =>
      (client as unknown as { Echo: (r: object, cb: (e: Error | null, r: EchoResponseObject) => void) => void }).Echo({ message: 'secure' }, (err, r) => (err ? reject(err) : resolve(r))),
    );
    client.close();
    assert.equal(res.message, 'secure');
  });
});
