// Idle keep-alive connections to an HTTP/1.1 app are closed by the sidecar before
// common apps close them (Node and Apache: 5 s), so a call is never written onto a
// connection the app is closing at that moment (the keep-alive race, which ends
// the call with ECONNRESET).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { IDLE_UPSTREAM_SOCKET_MS } from '../../src/upstream/h1-agent-pool.ts';
import { h1Request } from '../support/http-clients.ts';
import { startTestSidecar, type TestSidecar } from '../support/sidecar.ts';

describe('HTTP/1.1 upstream keep-alive', () => {
  let app: http.Server;
  let sc: TestSidecar;
  /** Each upstream connection, and whether the sidecar (not the app) ended it. */
  const connections: { socket: Socket; endedBySidecar: Promise<void> }[] = [];
  before(async () => {
    // The app keeps idle connections for a minute: any close within the test is the sidecar's.
    app = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
      req.resume();
      req.on('end', () => (req.url === '/slow' ? setTimeout(() => res.end('slow'), IDLE_UPSTREAM_SOCKET_MS + 1500) : res.end('ok')));
    });
    app.on('connection', (socket: Socket) => connections.push({ socket, endedBySidecar: new Promise((resolve) => socket.once('end', resolve)) }));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    sc = await startTestSidecar(`http://127.0.0.1:${(app.address() as AddressInfo).port}`, ['--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc.stop();
    app.closeAllConnections();
    await new Promise((resolve) => app.close(resolve));
  });

  it('closes an idle upstream connection before the shortest common keep-alive timeout, and the next call opens a new one', async () => {
    assert.ok(IDLE_UPSTREAM_SOCKET_MS < 5000, 'below Node and Apache keep-alive timeouts (5 s)');
    const first = await h1Request(sc.url + '/a', { method: 'POST', body: Buffer.from('one') });
    assert.equal(first.status, 200);
    assert.equal(connections.length, 1);
    const closed = await Promise.race([connections[0]!.endedBySidecar.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 30_000))]);
    assert.ok(closed, 'the idle upstream connection was still open after 30 s');
    const second = await h1Request(sc.url + '/b', { method: 'POST', body: Buffer.from('two') });
    assert.equal(second.status, 200);
    assert.equal(connections.length, 2, 'the second call went out on a new connection');
  });

  it('keeps a busy connection for calls that follow each other closely', async () => {
    const before = connections.length;
    for (let i = 0; i < 20; i++) assert.equal((await h1Request(sc.url + '/c', { method: 'POST', body: Buffer.from(String(i)) })).status, 200);
    assert.ok(connections.length - before <= 1, `${connections.length - before} new connections for 20 calls in a row`);
  });

  it('never cuts a call on a reused connection whose answer takes longer than the idle limit', async () => {
    assert.equal((await h1Request(sc.url + '/d', { method: 'POST', body: Buffer.from('warm') })).status, 200);
    const before = connections.length;
    const res = await h1Request(sc.url + '/slow', { method: 'POST', body: Buffer.from('slow') });
    assert.equal(res.status, 200);
    assert.equal(res.text, 'slow');
    assert.equal(connections.length, before, 'the slow call reused the warm connection');
  });
});
