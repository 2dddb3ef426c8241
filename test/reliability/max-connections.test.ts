// --max-connections on the real `sidecar/bin/rpcscope`: with two client
// connections open, a third is closed as it comes, unread and unanswered, and
// counted in rpcscope_connections_overflow_total; once one of the two has closed,
// a new connection is served again.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { rawConnect, responses, scrape, type RawClient } from '../support/raw-client.ts';
import { startRecordingUpstream, type RecordingUpstream } from '../support/recording-upstream.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const request = (path: string): string => `GET ${path} HTTP/1.1\r\nhost: app\r\n\r\n`;

/** Polls `check` until it holds; throws naming `what` after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A served connection: its request answered, and the connection kept open. */
async function served(port: number, path: string): Promise<RawClient> {
  const client = await rawConnect(port);
  client.socket.write(request(path));
  const [answer] = await responses(client, 1);
  assert.match(answer!.startLine, /^HTTP\/1\.1 200 /, path);
  return client;
}

describe('rpcscope binary, --max-connections 2', () => {
  let upstream: RecordingUpstream;
  let sc: SidecarProcess;
  before(async () => {
    upstream = await startRecordingUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--max-connections', '2']);
  });
  after(async () => {
    await sc.stop();
    await upstream.close();
  });

  it('closes a third concurrent connection unread and counts it; after one closes, a new one is served', async () => {
    assert.equal(await scrape(sc.adminUrl, 'rpcscope_connections_overflow_total'), 0, 'exported from the start, at 0');
    const first = await served(sc.port, '/one');
    const second = await served(sc.port, '/two');

    // The third: the kernel completes its handshake, and the sidecar closes it as it accepts it.
    const third = net.connect(sc.port, '127.0.0.1');
    const got: Buffer[] = [];
    third.on('data', (d: Buffer) => got.push(d));
    third.on('error', () => {});
    third.once('connect', () => third.write(request('/three')));
    const closed = new Promise<void>((resolve) => third.once('close', () => resolve()));
    await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('the third connection was not closed within 5 s')), 5000).unref())]);
    assert.equal(Buffer.concat(got).toString('latin1'), '', 'closed without an answer');
    assert.equal(await scrape(sc.adminUrl, 'rpcscope_connections_overflow_total'), 1);
    assert.equal(await scrape(sc.adminUrl, 'rpcscope_connections_active', { side: 'downstream' }), 2, 'never counted as open');

    // The two served connections are still served.
    second.socket.write(request('/two-again'));
    assert.match((await responses(second, 2))[1]!.startLine, /^HTTP\/1\.1 200 /);

    first.socket.end();
    await first.closed;
    await until('the sidecar to see the first connection closed', async () => (await scrape(sc.adminUrl, 'rpcscope_connections_active', { side: 'downstream' })) === 1);
    const fourth = await served(sc.port, '/four');
    assert.deepEqual(upstream.received.map((r) => r.url), ['/one', '/two', '/two-again', '/four'], 'the app never saw /three');
    assert.equal(await scrape(sc.adminUrl, 'rpcscope_connections_overflow_total'), 1);
    second.socket.end();
    fourth.socket.end();
  });
});
