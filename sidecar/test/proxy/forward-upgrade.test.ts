// WebSocket upgrades to an https:// upstream: verified with --upstream-ca,
// bounded by --connect-timeout, and counted as upstream connections.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { WebSocket, WebSocketServer } from 'ws';
import { makeSelfSignedCert } from '../support/certs.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

function open(url: string): Promise<{ ws?: WebSocket; status?: number }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode }));
    ws.once('error', () => resolve({}));
  });
}

describe('a WebSocket upgrade to a TLS upstream signed by --upstream-ca', () => {
  const cert = makeSelfSignedCert();
  let server: https.Server;
  let sc: TestSidecar;
  before(async () => {
    server = https.createServer({ cert: cert.cert, key: readFileSync(cert.keyFile) });
    const wss = new WebSocketServer({ server });
    wss.on('connection', (ws) => ws.on('message', (d, binary) => ws.send(d, { binary })));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    sc = await startTestSidecar(`https://127.0.0.1:${(server.address() as AddressInfo).port}`, ['--upstream-ca', cert.certFile, '--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('connects, relays, and counts the upstream connection', async () => {
    const { ws, status } = await open(`${sc.url.replace('http', 'ws')}/v1/ws`);
    assert.ok(ws, `upgrade answered ${status}`);
    const reply = new Promise<string>((r) => ws.once('message', (d) => r(String(d))));
    ws.send('ping');
    assert.equal(await reply, 'ping');
    const up = sc.recorder.opened.filter((c) => c.side === 'upstream');
    assert.equal(up.length, 1);
    assert.equal(up[0]!.calls, 1);
    ws.close();
    await new Promise((r) => ws.once('close', r));
    const deadline = Date.now() + 2000;
    while (!sc.recorder.closed.some((c) => c.side === 'upstream') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(sc.recorder.closed.filter((c) => c.side === 'upstream').length, 1);
  });
});

describe('a WebSocket upgrade to an upstream that never finishes connecting', () => {
  let silent: net.Server;
  const sockets: net.Socket[] = [];
  let sc: TestSidecar;
  before(async () => {
    // Accepts TCP and never answers the TLS hand-shake.
    silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    sc = await startTestSidecar(`https://127.0.0.1:${(silent.address() as AddressInfo).port}`, ['--connect-timeout', '300ms', '--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc.stop();
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it('is answered 503 once --connect-timeout passes', async () => {
    const { status } = await open(`${sc.url.replace('http', 'ws')}/v1/ws`);
    assert.equal(status, 503);
  });
});
