// A busy endpoint is not a dead one. An outbound sidecar balancing HTTP/2 REST
// callers over two HTTP/1.1-only endpoints (each learnt to speak HTTP/1.1 alone),
// one of them holding its one connection busy: a call past that endpoint's
// --upstream-max-pending is answered 503 at once and counted, and the endpoint
// stays in rotation, with the HTTP version it was learnt to speak. It used to be
// taken for unreachable: backed off by the balancer (its calls all went to the
// other endpoint) and its HTTP version forgotten (asked again on the next call).
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { settledScrape } from '../support/admin-scrape.ts';
import { eventually } from '../support/eventually.ts';
import { sum } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

interface App {
  authority: string;
  /** Calls held unanswered (`/hold`), answered by release(). */
  held(): number;
  release(): void;
  close(): void;
}

/** An HTTP/1.1-only app answering its own name, or holding `/hold` calls until released. */
async function startApp(name: string): Promise<App> {
  const held: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/hold') held.push(res);
      else res.writeHead(200, { 'content-type': 'text/plain' }).end(name);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    authority: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => held.length,
    release: () => {
      for (const res of held.splice(0)) res.writeHead(200, { 'content-type': 'text/plain' }).end(name);
    },
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

function get(session: http2.ClientHttp2Session, path: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': path });
    let status = 0;
    let text = '';
    req.setEncoding('utf8');
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (d: string) => (text += d));
    req.on('end', () => resolve({ status, text }));
    req.on('error', reject);
    req.end();
  });
}

describe('rpcscope binary, outbound, and an HTTP/1.1 endpoint whose connections and queue are full', () => {
  let busy: App;
  let idle: App;
  let sc: SidecarProcess;
  before(async () => {
    busy = await startApp('busy');
    idle = await startApp('idle');
    sc = await startSidecarProcess([
      '--mode', 'outbound', '--upstream', `http://${busy.authority}`, '--endpoints', `${busy.authority},${idle.authority}`, '--balance', 'round_robin',
      '--upstream-max-connections', '1', '--upstream-max-pending', '0',
    ]);
  });
  after(async () => {
    await sc.stop();
    busy.close();
    idle.close();
  });

  it('answers a call past the queue 503 and counts it, and keeps the endpoint in rotation with its learnt HTTP version', async () => {
    const session = http2.connect(sc.url);
    session.on('error', () => {});
    // Round robin sends one of these to each endpoint: the busy one holds its call, and its one connection with it.
    const holding = [get(session, '/hold'), get(session, '/hold')];
    await eventually(() => busy.held() === 1 && idle.held() === 1, 'a call held on each endpoint');
    idle.release();
    assert.equal((await holding[1]!).text, 'idle');
    const learnt = (): number => sc.log().split('\n').filter((l) => l.includes('upstream HTTP versions learned') && l.includes(busy.authority)).length;
    assert.equal(learnt(), 1, 'the busy endpoint was learnt to speak HTTP/1.1 only');

    // Round robin goes on alternating: every other call finds the busy endpoint's queue full.
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await get(session, `/call/${i}`));
    const refused = answers.filter((a) => a.status === 503);
    assert.equal(refused.length, 3, `answers: ${answers.map((a) => `${a.status} ${a.text.slice(0, 40)}`).join(' | ')}`);
    assert.ok(refused.every((a) => a.text.includes('--upstream-max-pending')), `the answer says why: ${refused[0]?.text}`);
    assert.deepEqual(answers.filter((a) => a.status === 200).map((a) => a.text), ['idle', 'idle', 'idle']);

    busy.release();
    assert.equal((await holding[0]!).text, 'busy');
    // Free again, the busy endpoint answers its share at once, over HTTP/1.1 as learnt: never asked again.
    const after = [];
    for (let i = 0; i < 4; i++) after.push((await get(session, `/after/${i}`)).text);
    assert.deepEqual(after.sort(), ['busy', 'busy', 'idle', 'idle']);
    assert.equal(learnt(), 1, 'its HTTP version was not forgotten');
    session.close();

    const samples = await settledScrape(sc.adminUrl);
    assert.equal(sum(samples, 'rpcscope_upstream_queue_overflow_total'), 3);
    assert.equal(sum(samples, 'rpcscope_calls_total', { code: 'UNAVAILABLE' }), 3);
  });
});
