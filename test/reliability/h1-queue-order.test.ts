// HTTP/1.1 calls waiting for an endpoint's one connection (--upstream-max-connections 1)
// go out in the order they came, and a caller that goes away while its call waits
// takes no place in the queue: its call never reaches the app, and the calls after
// it are queued, not answered 503, though --upstream-max-pending counted it.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { scrape, settledScrape } from '../support/admin-scrape.ts';
import { eventually } from '../support/eventually.ts';
import { sum } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

/** An HTTP/1.1 app noting the path of each call it receives, in order; `/hold` is answered on release(). */
async function startApp(): Promise<{ url: string; seen: string[]; release: () => void; close: () => void }> {
  const seen: string[] = [];
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    req.resume();
    req.on('end', () => (req.url === '/hold' ? held.push(res) : res.end(req.url)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    release: () => {
      for (const res of held.splice(0)) res.end('/hold');
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** A GET on a client connection of its own, and the way to give it up. */
function get(base: string, path: string, agent: http.Agent): { answer: Promise<{ status: number; text: string }>; cancel: () => void } {
  let req: http.ClientRequest | undefined;
  const answer = new Promise<{ status: number; text: string }>((resolve) => {
    req = http.get(`${base}${path}`, { agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', (err) => resolve({ status: 0, text: err.message }));
  });
  return { answer, cancel: () => req?.destroy() };
}

describe('rpcscope binary and HTTP/1.1 calls waiting for an endpoint’s one connection', () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp();
    sc = await startSidecarProcess(['--upstream', app.url, '--upstream-protocol', 'http1', '--upstream-max-connections', '1', '--upstream-max-pending', '2']);
  });
  after(async () => {
    await sc?.stop();
    app?.close();
  });

  it('sends the waiting calls in order once the connection is free, and drops the call of a caller that went away', async () => {
    const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
    const active = async (): Promise<number> => sum(await scrape(sc.adminUrl), 'rpcscope_calls_active');
    const hold = get(sc.url, '/hold', agent);
    await eventually(() => app.seen.length === 1, 'the first call holding the connection');

    const gone = get(sc.url, '/gone', agent);
    await eventually(async () => (await active()) === 2, 'the second call waiting');
    gone.cancel();
    await eventually(async () => (await active()) === 1, 'the second call ended by its caller');

    // Two places in the queue: the call that was given up holds none of them.
    const first = get(sc.url, '/first', agent);
    await eventually(async () => (await active()) === 2, 'the third call waiting');
    const second = get(sc.url, '/second', agent);
    await eventually(async () => (await active()) === 3, 'the fourth call waiting');
    assert.deepEqual(app.seen, ['/hold'], 'nothing more reached the app while its connection was busy');

    app.release();
    assert.deepEqual(await hold.answer, { status: 200, text: '/hold' });
    assert.deepEqual(await first.answer, { status: 200, text: '/first' });
    assert.deepEqual(await second.answer, { status: 200, text: '/second' });
    assert.deepEqual(app.seen, ['/hold', '/first', '/second'], 'in the order they came; the given-up call never sent');
    agent.destroy();

    const samples = await settledScrape(sc.adminUrl);
    assert.equal(sum(samples, 'rpcscope_upstream_queue_overflow_total'), 0, 'no call found the queue full');
    assert.equal(sum(samples, 'rpcscope_calls_active'), 0);
  });
});
