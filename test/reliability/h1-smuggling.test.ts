// Request smuggling through requests rpcscope does forward, written byte for
// byte on raw TCP to the real `sidecar/bin/rpcscope` in front of an HTTP/1.1
// keep-alive app on raw TCP that reads every byte it receives strictly
// (test/support/h1-framing.ts):
// - a GET, DELETE or OPTIONS with a chunked body: the body must reach the app
//   chunked, as one request's body, and never as a request of its own;
// - an Upgrade the app refuses (200, not 101): the connection is not a tunnel,
//   so what the client sends next must not reach the app past rpcscope's
//   parser and its count.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { settledScrape } from '../support/admin-scrape.ts';
import { field } from '../support/h1-framing.ts';
import { sum } from '../support/metrics-text.ts';
import { rawConnect, responses } from '../support/raw-client.ts';
import { startRawUpstream, type RawUpstream } from '../support/raw-upstream.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** A whole request, hidden as the body of another. */
const SMUGGLED = 'GET /smuggled HTTP/1.1\r\nhost: app\r\n\r\n';

function chunked(body: string): string {
  return `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
}

/** Rejects after `ms`: a bound on waiting for something the test expects to happen. */
function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}

/** The app read every byte of every connection as whole, well-framed requests. */
function assertEveryByteFramed(app: RawUpstream): void {
  for (const [i, conn] of app.connections.entries()) {
    assert.equal(conn.error, undefined, `upstream connection ${i}: ${conn.error}`);
    assert.equal(conn.leftover().toString('latin1'), '', `upstream connection ${i}: bytes after its last request`);
    assert.ok(Buffer.concat(conn.requests.map((r) => r.raw)).equals(conn.bytes()), `upstream connection ${i}: its bytes are exactly its requests`);
  }
}

for (const method of ['GET', 'DELETE', 'OPTIONS']) {
  describe(`rpcscope binary, --upstream-protocol http1: a ${method} with a chunked body holding a request`, () => {
    let app: RawUpstream;
    let sc: SidecarProcess;
    before(async () => {
      app = await startRawUpstream();
      sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1']);
    });
    after(async () => {
      await sc.stop();
      await app.close();
    });

    it('reaches the app as one request whose body is chunked, and the next request gets its own answer', async () => {
      const client = await rawConnect(sc.port);
      client.socket.write(`${method} /first HTTP/1.1\r\nhost: app\r\ntransfer-encoding: chunked\r\n\r\n${chunked(SMUGGLED)}`);
      const [first] = await responses(client, 1);
      assert.equal(first!.body.toString(), `${method} /first`);
      // The next request on the same keep-alive connection, as a victim sharing the upstream connection.
      client.socket.write('GET /victim HTTP/1.1\r\nhost: app\r\n\r\n');
      const [, victim] = await responses(client, 2);
      assert.equal(victim!.body.toString(), 'GET /victim', 'the victim got its own answer, not the smuggled one');
      client.socket.end();

      assert.deepEqual(app.seen(), [`${method} /first`, 'GET /victim']);
      assertEveryByteFramed(app);
      const req = app.connections.flatMap((c) => c.requests).find((r) => r.startLine === `${method} /first HTTP/1.1`)!;
      assert.equal(req.framing, 'chunked');
      assert.deepEqual(field(req, 'transfer-encoding'), ['chunked']);
      assert.deepEqual(field(req, 'content-length'), []);
      assert.equal(req.body.toString('latin1'), SMUGGLED, 'the body arrived whole, as a body');

      const samples = await settledScrape(sc.adminUrl);
      assert.equal(sum(samples, 'rpcscope_calls_total', { method: `${method} /first` }), 1);
      assert.equal(sum(samples, 'rpcscope_calls_total', { method: 'GET /victim' }), 1);
      assert.equal(sum(samples, 'rpcscope_calls_total'), 2);
    });
  });
}

describe('rpcscope binary: an Upgrade the app answers 200', () => {
  let app: RawUpstream;
  let sc: SidecarProcess;
  before(async () => {
    app = await startRawUpstream();
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1']);
  });
  after(async () => {
    await sc.stop();
    await app.close();
  });

  it('relays the answer and closes: what follows on that connection never reaches the app uncounted', async () => {
    const client = await rawConnect(sc.port);
    client.socket.write('GET /ws HTTP/1.1\r\nhost: app\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n');
    const [answer] = await responses(client, 1);
    assert.match(answer!.startLine, /^HTTP\/1\.1 200 /);
    assert.equal(answer!.body.toString(), 'GET /ws');
    // Not a tunnel: the next requests are HTTP/1.1, one of them a smuggling shape
    // (Content-Length with Transfer-Encoding) rpcscope's parser refuses.
    client.socket.write('GET /unseen-1 HTTP/1.1\r\nhost: app\r\n\r\n');
    client.socket.write('POST /unseen-2 HTTP/1.1\r\nhost: app\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n');
    // Either rpcscope closes the connection, or (a tunnel) the app's answer to /unseen-1 comes back.
    await within(5000, 'the connection closed, or a second answer', Promise.race([client.closed, responses(client, 2).catch(() => undefined)]));
    assert.notEqual(client.closedAt, undefined, 'the client connection was closed after the answer');
    assert.equal((await responses(client, 1))[0]!.raw.length, client.received().length, 'one answer, nothing after it');
    // The app's connection is closed too: nothing more can arrive on it.
    const upgraded = app.connections.find((c) => c.requests.some((r) => r.startLine === 'GET /ws HTTP/1.1'));
    assert.ok(upgraded, 'the Upgrade request reached the app');
    await within(5000, 'the upstream connection closed', upgraded.closed);

    assert.deepEqual(app.seen(), ['GET /ws']);
    assertEveryByteFramed(app);
    const samples = await settledScrape(sc.adminUrl);
    assert.equal(sum(samples, 'rpcscope_calls_total', { method: 'GET /ws', http_status: '200' }), 1, 'the refused upgrade is counted as a call');
    assert.equal(sum(samples, 'rpcscope_calls_total'), 1);
  });
});
