// What an upstream speaks, asked of real servers: node:http, node:http2 with and
// without HTTP/1.1, in cleartext and over TLS, and a port nobody listens on.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import type { UpstreamUrl } from '../../src/config/parse-value.ts';
import { probeUpstreamSpeaks } from '../../src/upstream/upstream-protocol-probe.ts';
import { makeSelfSignedCert } from '../support/certs.ts';

const cert = makeSelfSignedCert();
const key = readFileSync(cert.keyFile);
const opts = { connectTimeoutMs: 2000, ca: cert.cert };

function target(tls: boolean, port: number): UpstreamUrl {
  return { tls, host: '127.0.0.1', port, authority: `127.0.0.1:${port}`, href: `${tls ? 'https' : 'http'}://127.0.0.1:${port}` };
}

const SERVERS: { name: string; tls: boolean; make: () => Server; h1: boolean; h2: boolean }[] = [
  { name: 'node:http', tls: false, make: () => http.createServer((_q, s) => s.end()), h1: true, h2: false },
  // HTTP/1.1 in cleartext is not asked (the app would see the request): yes until a call says otherwise.
  { name: 'node:http2 (h2c only)', tls: false, make: () => http2.createServer(), h1: true, h2: true },
  { name: 'node:https', tls: true, make: () => https.createServer({ cert: cert.cert, key }, (_q, s) => s.end()), h1: true, h2: false },
  { name: 'node:http2 over TLS', tls: true, make: () => http2.createSecureServer({ cert: cert.cert, key }), h1: false, h2: true },
  { name: 'node:http2 over TLS with allowHTTP1', tls: true, make: () => http2.createSecureServer({ cert: cert.cert, key, allowHTTP1: true }, (_q, s) => s.end()), h1: true, h2: true },
];

describe('asking an upstream what it speaks', () => {
  const started: Server[] = [];
  after(() => {
    for (const s of started) s.close();
  });

  for (const server of SERVERS) {
    it(`${server.name}: HTTP/1.1 ${server.h1 ? 'yes' : 'no'}, HTTP/2 ${server.h2 ? 'yes' : 'no'}`, async () => {
      const s = server.make();
      started.push(s);
      await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
      const t = target(server.tls, (s.address() as AddressInfo).port);
      assert.deepEqual([await probeUpstreamSpeaks(t, '1.1', opts), await probeUpstreamSpeaks(t, '2', opts)], [server.h1, server.h2]);
    });
  }

  it('makes no connection to ask about HTTP/1.1 in cleartext', async () => {
    let connections = 0;
    const s = http.createServer((_q, r) => r.end());
    s.on('connection', () => connections++);
    started.push(s);
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    assert.equal(await probeUpstreamSpeaks(target(false, (s.address() as AddressInfo).port), '1.1', opts), true);
    assert.equal(connections, 0);
  });

  it('answers nothing for an endpoint it cannot reach', async () => {
    // Port 1 on loopback: nothing listens there.
    assert.deepEqual([await probeUpstreamSpeaks(target(false, 1), '2', opts), await probeUpstreamSpeaks(target(true, 1), '1.1', opts)], [undefined, undefined]);
  });
});
