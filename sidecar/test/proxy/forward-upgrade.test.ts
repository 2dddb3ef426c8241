// WebSocket upgrades to an https:// upstream: verified with --upstream-ca,
// bounded by --connect-timeout, and counted as upstream connections. The sockets
// are joined only once the upstream has switched protocols (101); what the client
// sent before then reaches the upstream after it.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
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

/** Resolves once `socket` has received `text` in all (it keeps reading). */
function receivedText(socket: net.Socket, text: string, timeoutMs = 5000): Promise<string> {
  let got = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`did not receive ${JSON.stringify(text)} within ${timeoutMs} ms: ${JSON.stringify(got)}`)), timeoutMs);
    const onData = (d: Buffer): void => {
      got += d.toString('latin1');
      if (!got.includes(text)) return;
      clearTimeout(timer);
      socket.off('data', onData);
      resolve(got);
    };
    socket.on('data', onData);
  });
}

describe('an upgrade the upstream switches to (101)', () => {
  let server: http.Server;
  let sc: TestSidecar;
  /** What the upstream read on its upgraded connections, after the hand-shake. */
  const upstreamRead: string[] = [];
  before(async () => {
    // Switches to a protocol that echoes every byte.
    server = http.createServer((_req, res) => res.writeHead(426).end());
    server.on('upgrade', (_req, socket: net.Socket, head: Buffer) => {
      socket.write('HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\n');
      socket.write(head);
      upstreamRead.push(head.toString('latin1'));
      socket.on('data', (d: Buffer) => upstreamRead.push(d.toString('latin1')));
      socket.pipe(socket);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    sc = await startTestSidecar(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, ['--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc.stop();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('holds what the client sent before the 101 until then, and joins the sockets after it', async () => {
    const client = net.connect(sc.port, '127.0.0.1');
    client.on('error', () => {});
    await new Promise((r) => client.once('connect', r));
    const switched = receivedText(client, 'early bytes');
    // The client writes ahead of the answer: those bytes are the new protocol's, held until the switch.
    client.write('GET /echo HTTP/1.1\r\nhost: app\r\nconnection: upgrade\r\nupgrade: echo\r\n\r\nearly bytes');
    const got = await switched;
    assert.match(got, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
    assert.match(got, /\r\nupgrade: echo\r\n/i);
    assert.ok(got.endsWith('\r\n\r\nearly bytes'), JSON.stringify(got));
    const echoed = receivedText(client, 'later bytes');
    client.write('later bytes');
    await echoed;
    assert.equal(upstreamRead.join(''), 'early byteslater bytes', 'the upstream read them once each, after the switch');
    client.end();
    const rec = (await sc.recorder.waitForEnded(1)).find((r) => r.path === '/echo');
    assert.ok(rec, 'the upgrade is counted as a call');
    assert.equal(rec.httpStatus, 101);
    assert.equal(rec.reset, undefined, 'a tunnel closed by its client ended normally');
  });
});
