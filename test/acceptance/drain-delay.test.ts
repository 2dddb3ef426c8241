// Acceptance: `--drain-delay` as a pod's termination meets it. After SIGTERM
// the endpoint is still in kube-proxy's rules and other clients' balancers for
// a while, so new connections keep arriving: the sidecar fails /readyz at once
// but keeps accepting and serving them for the delay, then sends GOAWAY and
// lets the calls in flight finish (Istio's terminationDrainDuration, Linkerd's
// wait-before-exit).
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import { describe, it } from 'node:test';
import { startSidecarProcess } from '../support/sidecar-process.ts';

const DELAY_MS = 2000;
const SLOW_MS = 1500;

async function startUpstream(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const wait = req.url?.startsWith('/slow') ? SLOW_MS : 0;
    setTimeout(() => res.end('ok'), wait);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

/** One call on a connection of its own, as from a client that has just picked this pod. */
function freshCall(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/v1/orders', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
  });
}

async function readyz(adminUrl: string): Promise<number> {
  const res = await fetch(`${adminUrl}/readyz`);
  await res.arrayBuffer();
  return res.status;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('rpcscope binary: --drain-delay', () => {
  it('keeps serving new connections for the delay with readiness false, then GOAWAYs and finishes the call in flight', async () => {
    const upstream = await startUpstream();
    const sc = await startSidecarProcess(['--upstream', upstream.url, '--drain-delay', `${DELAY_MS}ms`, '--drain-timeout', '10s']);
    const session = http2.connect(sc.url);
    try {
      assert.equal(await readyz(sc.adminUrl), 200);
      let goawayAt = 0;
      session.on('goaway', () => (goawayAt = Date.now()));
      session.on('error', () => {});
      const start = Date.now();
      sc.proc.kill('SIGTERM');

      // New connections every 50 ms through most of the delay: none may fail.
      const calls: Promise<number>[] = [];
      let readyDuringDelay = 0;
      let slow: Promise<number> | undefined;
      while (Date.now() - start < DELAY_MS - 400) {
        calls.push(freshCall(sc.port));
        if (readyDuringDelay === 0 && Date.now() - start > 200) readyDuringDelay = await readyz(sc.adminUrl);
        // A long call begun just before the delay ends, on a connection opened before SIGTERM.
        if (slow === undefined && Date.now() - start > DELAY_MS - 700) {
          slow = new Promise<number>((resolve) => {
            const s = session.request({ ':path': '/slow', ':method': 'GET' });
            let status = 0;
            s.on('response', (h) => (status = Number(h[':status'])));
            s.resume();
            s.on('end', () => resolve(status));
            s.on('error', () => resolve(-1));
          });
        }
        await sleep(50);
      }
      const statuses = await Promise.all(calls);
      assert.ok(statuses.length >= 20, `only ${statuses.length} calls sent`);
      assert.deepEqual(statuses.filter((s) => s !== 200), [], 'calls lost during the drain delay');
      assert.equal(readyDuringDelay, 503, '/readyz still passes after SIGTERM');

      assert.ok(slow);
      assert.equal(await slow, 200, 'the call in flight at the end of the delay was lost');
      assert.ok(goawayAt - start >= DELAY_MS - 100, `GOAWAY came ${goawayAt - start} ms after SIGTERM, before the delay was over`);
      assert.equal(await sc.exited, 0);
      assert.match(sc.log(), /"draining".*"delayMs":2000/);
    } finally {
      session.destroy();
      await sc.stop();
      await upstream.close();
    }
  });

  it('refuses a bad value', async () => {
    await assert.rejects(startSidecarProcess(['--upstream', 'http://127.0.0.1:9', '--drain-delay', 'soon']), /drain-delay/);
  });
});
