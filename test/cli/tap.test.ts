// `rpcscope tap` and /debug/tap through real traffic on both data planes: each
// call a line with its labels, figures, peer and deadline; filters applied by
// the sidecar; a watcher that reads slowly costs neither memory nor the calls'
// time; a watcher that leaves frees its place; and /debug/* refuses callers
// from outside the pod without the token, counted.
import assert from 'node:assert/strict';
import http from 'node:http';
import { networkInterfaces } from 'node:os';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PROTO_DIR, startOrderService } from '@rpcscope/demo';
import { grpcCaller, restCaller } from '@rpcscope/demo/story-callers';
import { sum } from '../support/metrics-text.ts';
import { scrape } from '../support/admin-scrape.ts';
import { rssBytes } from '../support/process-stats.ts';
import { startSidecarProcess } from '../support/sidecar-process.ts';
import { runCli } from './cli-process.ts';
import { orderId, send } from './scripted-fleet.ts';

interface Line { kind: string; direction: string; protocol: string; method: string; code: string; http_status: string; duration_ms: number; response_bytes: number; peer: string; upstream: string; deadline_ms: number | null; reset: string }

for (const dataPlane of ['relay', 'terminate']) {
  test(`tap on the ${dataPlane} data plane: one line per call, filtered by the sidecar`, { timeout: 60_000 }, async () => {
    const app = await startOrderService({ latencyScale: 0 });
    const sidecar = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR, '--data-plane', dataPlane]);
    const grpc = grpcCaller(sidecar.url);
    const rest = restCaller(sidecar.url);
    try {
      const watching = runCli(['tap', '--admin', new URL(sidecar.adminUrl).host, '--protocol', 'grpc', '--count', '20', '--format', 'json']);
      const text = runCli(['tap', '--admin', new URL(sidecar.adminUrl).host, '--method', 'order.v1.OrderService/GetOrder', '--count', '3']);
      // Calls keep coming until both watchers have seen theirs.
      let done = false;
      void Promise.all([watching, text]).finally(() => (done = true));
      const sent = { grpc: 0, rest: 0 };
      while (!done) {
        await Promise.all([grpc.call({ operation: 'GetOrder', id: orderId(sent.grpc), deadlineMs: 1500 }, new AbortController().signal), rest.call({ operation: 'GetOrder', id: orderId(sent.rest) }, new AbortController().signal)]);
        sent.grpc++;
        sent.rest++;
        await new Promise((r) => setTimeout(r, 20));
      }
      const json = await watching;
      assert.equal(json.code, 0, json.stderr);
      const lines = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as Line).filter((l) => l.kind === 'call');
      assert.equal(lines.length, 20);
      for (const l of lines) {
        assert.deepEqual([l.direction, l.protocol, l.method, l.code, l.http_status, l.deadline_ms, l.reset], ['inbound', 'grpc', 'order.v1.OrderService/GetOrder', 'OK', '200', 1500, '']);
        assert.match(l.peer, /^127\.0\.0\.1:\d+$/u);
        assert.equal(l.upstream, new URL(app.url).host);
        assert.ok(l.response_bytes > 0 && l.duration_ms > 0);
      }
      const t = await text;
      assert.equal(t.code, 0, t.stderr);
      const rows = t.stdout.trim().split('\n');
      assert.equal(rows.length, 3);
      // --method matches a call's method or its operation: REST's route is bound to the RPC by its google.api.http rule.
      for (const row of rows) assert.match(row, /^\d\d:\d\d:\d\d\.\d{3} {2}in {3}(grpc +order\.v1\.OrderService\/GetOrder|rest +GET \/v1\/orders\/\{id\}) +OK +200 .* peer 127\.0\.0\.1:\d+ {2}reset - {2}deadline /u);
    } finally {
      grpc.close();
      rest.close();
      await sidecar.stop();
      await app.close();
    }
  });
}

/** A /debug/tap watcher that never reads: its socket's buffers fill, then the sidecar's. */
function stalledWatcher(adminUrl: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${adminUrl}/debug/tap?max_rate=1000`, (res) => {
      res.pause();
      res.socket.pause();
      resolve(res);
    });
    req.on('error', reject);
  });
}

test('a watcher that reads slowly: the sidecar\'s memory stays flat and the calls are not slowed; one that leaves frees its place', { timeout: 120_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const sidecar = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR]);
  const rest = restCaller(sidecar.url);
  const grpc = grpcCaller(sidecar.url);
  try {
    const call = (i: number) => ({ operation: 'GetOrder' as const, id: orderId(i), deadlineMs: 5000 });
    await send(grpc, 500, call, { concurrency: 16 });
    const unwatched = await send(grpc, 2000, call, { concurrency: 16 });
    const rssBefore = rssBytes(sidecar.proc.pid!);
    const slow = await stalledWatcher(sidecar.adminUrl);
    const watched = await send(grpc, 2000, call, { concurrency: 16 });
    const watchedMore = await send(grpc, 2000, call, { concurrency: 16 });
    const rssAfter = rssBytes(sidecar.proc.pid!);
    assert.deepEqual([unwatched.byCode, watched.byCode, watchedMore.byCode], [{ OK: 2000 }, { OK: 2000 }, { OK: 2000 }]);
    // 4,000 lines went to a reader that took none: the sidecar's memory did not follow them.
    assert.ok(rssAfter - rssBefore < 24 * 1024 * 1024, `the sidecar grew by ${((rssAfter - rssBefore) / 1048576).toFixed(1)} MiB with a stalled watcher`);
    const p50 = (t: typeof watched): number => t.seconds[Math.floor(t.seconds.length / 2)]!;
    assert.ok(p50(watched) < p50(unwatched) * 2 + 0.002, `p50 ${p50(watched)} s watched, ${p50(unwatched)} s not`);

    // Reading again, the watcher gets every call it was attached for: as a line, or counted in a `skipped` line
    // (over its rate, or dropped while it lagged); none is lost silently.
    const seen: string[] = [];
    slow.setEncoding('utf8');
    slow.on('data', (d: string) => seen.push(d));
    slow.socket.resume();
    slow.resume();
    await send(rest, 50, (i) => ({ operation: 'GetOrder', id: orderId(i) }), { spreadMs: 2500 });
    await new Promise((r) => setTimeout(r, 1500));
    const lines = seen.join('').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; slow_reader?: number; rate_limited?: number });
    const skipped = lines.filter((l) => l.kind === 'skipped').reduce((a, l) => a + (l.slow_reader ?? 0) + (l.rate_limited ?? 0), 0);
    assert.equal(lines.filter((l) => l.kind === 'call').length + skipped, 4050);

    // Eight watchers at most; the ninth is told to come back, and gets in once one has left.
    slow.destroy();
    const watchers = await Promise.all(Array.from({ length: 8 }, () => stalledWatcher(sidecar.adminUrl)));
    const ninth = await fetch(`${sidecar.adminUrl}/debug/tap`);
    assert.equal(ninth.status, 503);
    watchers[0]!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const tenth = await stalledWatcher(sidecar.adminUrl);
    assert.equal(tenth.statusCode, 200);
    for (const w of [...watchers, tenth]) w.destroy();
  } finally {
    rest.close();
    grpc.close();
    await sidecar.stop();
    await app.close();
  }
});

const outsideAddress = Object.values(networkInterfaces()).flat().find((i) => i !== undefined && i.family === 'IPv4' && !i.internal)?.address;

test('/debug/* from outside the pod: 401 without the token, 403 with a wrong one, counted; the token file re-read when it changes', { skip: outsideAddress === undefined ? 'no non-loopback address on this machine' : false, timeout: 60_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-token-'));
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'first-secret\n');
  const app = await startOrderService({ latencyScale: 0 });
  const sidecar = await startSidecarProcess(['--upstream', app.url, '--admin', `${outsideAddress}:0`, '--admin-token-file', tokenFile]);
  try {
    const admin = `http://${outsideAddress}:${new URL(sidecar.adminUrl).port}`;
    const get = async (path: string, token?: string): Promise<number> => (await fetch(`${admin}${path}`, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })).status;
    assert.deepEqual([await get('/metrics'), await get('/healthz'), await get('/readyz')], [200, 200, 200]);
    assert.equal(await get('/debug/connections'), 401);
    assert.equal(await get('/debug/tap', 'guess'), 403);
    assert.equal(await get('/debug/connections', 'first-secret'), 200);
    // The Secret rotates: the file is replaced, the old token stops working.
    writeFileSync(tokenFile, 'second-secret\n');
    assert.equal(await get('/debug/connections', 'first-secret'), 403);
    assert.equal(await get('/debug/connections', 'second-secret'), 200);
    const metrics = await scrape(admin);
    assert.deepEqual([sum(metrics, 'rpcscope_admin_requests_refused_total', { reason: 'unauthenticated' }), sum(metrics, 'rpcscope_admin_requests_refused_total', { reason: 'forbidden' })], [1, 2]);

    // The commands take the token the same way.
    const refused = await runCli(['tap', '--admin', `${outsideAddress}:${new URL(admin).port}`, '--count', '1']);
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, /HTTP 401: the admin port asks for a token: pass --admin-token-file/u);
    const tapped = runCli(['tap', '--admin', `${outsideAddress}:${new URL(admin).port}`, '--count', '1', '--admin-token-file', tokenFile]);
    let done = false;
    void tapped.finally(() => (done = true));
    while (!done) {
      await fetch(`${sidecar.url}/v1/orders/${orderId(0)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const run = await tapped;
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /rest +GET \/v1\/orders\/\{id\} +OK +200 /u);
  } finally {
    await sidecar.stop();
    await app.close();
  }
});
