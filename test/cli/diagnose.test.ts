// `rpcscope diagnose` against the real thing: a real Prometheus with
// deploy/prometheus's rules, scraping real sidecars in front of a scripted
// fleet. One scenario per finding, each asserting the finding, its figures
// against the traffic script's own tally and the exit status; and a healthy
// fleet that yields no finding at all.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { test } from 'node:test';
import { OrderStore, PROTO_DIR, startOrderService, DELAY_HEADER } from '@rpcscope/demo';
import { connectCaller, grpcCaller, restCaller } from '@rpcscope/demo/story-callers';
import { freePort } from '../support/prometheus.ts';
import { runCli } from './cli-process.ts';
import { grpcCall, startRefusingUpstream } from './refusing-upstream.ts';
import { diagnose, orderId, send, startScriptedFleet, startScriptedPod, waitScraped, type DiagnoseRun } from './scripted-fleet.ts';

/** `--since` covering everything from `startMs` to now, with a second to spare. */
const sinceOf = (startMs: number): string => `${Math.ceil((Date.now() - startMs) / 1000) + 2}s`;
const near = (got: number, want: number, tolerance: number, what: string): void => assert.ok(Math.abs(got - want) <= tolerance, `${what}: ${got}, expected ${want} ± ${tolerance}`);
const only = (run: DiagnoseRun, kind: string) => {
  assert.deepEqual(run.report.findings.map((f) => f.kind), [kind], `the findings: ${run.report.findings.map((f) => f.title).join(' | ')}`);
  return run.report.findings[0]!;
};

test('a healthy fleet yields no finding and exit status 0', { timeout: 120_000 }, async () => {
  const s = await startScriptedFleet({ namespace: 'healthy', service: 'orders', pods: 3, pick: 'round_robin' });
  const callers = [0, 1, 2].map(() => grpcCaller(s.fleet.balancer.url));
  const rest = restCaller(s.fleet.balancer.url);
  try {
    const start = Date.now();
    // One gRPC connection per pod (round robin), REST over a dozen keep-alive connections; every call with a deadline.
    const tallies = await Promise.all([...callers.map((c) => send(c, 150, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 6000 })), send(rest, 150, (i) => ({ operation: 'GetOrder', id: orderId(i) }), { spreadMs: 6000 })]);
    for (const t of tallies) assert.deepEqual(t.byCode, { OK: 150 });
    await waitScraped(s.prometheus, s.fleet);
    const run = await diagnose(s.prometheus, ['--namespace', 'healthy', '--since', sinceOf(start)]);
    assert.deepEqual(run.report.findings.map((f) => f.title), []);
    assert.equal(run.code, 0);
    const text = await runCli(['diagnose', '--prometheus', s.prometheus.url, '--namespace', 'healthy', '--since', sinceOf(start)]);
    assert.match(text.stdout, /^rpcscope diagnose: nothing found in healthy\/orders/u);
  } finally {
    for (const c of [...callers, rest]) c.close();
    await s.stop();
  }
});

test('a pod pinned behind a connection-balancing front: named with its share, skew and client connection; exit 2', { timeout: 120_000 }, async () => {
  const s = await startScriptedFleet({ namespace: 'pinned', service: 'orders', pods: 3, pick: 'random' });
  const client = grpcCaller(s.fleet.balancer.url);
  try {
    // Every pod has served a call before (another caller, a probe).
    for (const pod of s.fleet.pods) {
      const warm = grpcCaller(`http://${pod.endpoint.host}:${pod.endpoint.port}`);
      assert.equal((await warm.call({ operation: 'GetOrder', id: orderId(0), deadlineMs: 2000 }, new AbortController().signal)).code, 'OK');
      warm.close();
    }
    const start = Date.now();
    const tally = await send(client, 400, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 6000 });
    const busy = Object.keys(tally.byPod);
    assert.equal(busy.length, 1, `one pod answered every call: ${JSON.stringify(tally.byPod)}`);
    await waitScraped(s.prometheus, s.fleet);
    const run = await diagnose(s.prometheus, ['--namespace', 'pinned', '--since', sinceOf(start)]);
    const f = only(run, 'pinned_pods');
    const hot = f.figures.hot as Array<{ pod: string; share: number; connections: Array<{ peer: string; share: number; calls: number }> }>;
    assert.deepEqual(hot.map((h) => h.pod), busy);
    // The tally: 400 of the 400 calls in the window on one pod (the warm-up calls came before it).
    near(hot[0]!.share, 1, 0.02, 'the pinned pod\'s share');
    near(f.figures.skew as number, 3, 0.06, 'the skew');
    assert.equal(hot[0]!.connections.length, 1, 'one client connection open on the pinned pod');
    assert.equal(hot[0]!.connections[0]!.calls, 400);
    assert.equal(hot[0]!.connections[0]!.share, 1);
    assert.match(hot[0]!.connections[0]!.peer, /^127\.0\.0\.1:\d+$/u);
    assert.equal(f.severity, 'critical');
    assert.match(f.remedy[0]!, /^--max-connection-age 5m on pinned\/orders's inbound sidecars .* each of the 3 pods would take about 33 %/u);
    assert.equal(f.runbook, 'deploy/README.md#runbook-rpcscopepodloadskew');
    assert.equal(run.code, 2);
  } finally {
    client.close();
    await s.stop();
  }
});

test('deadline-less callers: by operation and protocol with their share; exit 1', { timeout: 120_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const s = await startScriptedPod({ namespace: 'nodeadline', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR] });
  const grpc = grpcCaller(s.sidecar.url);
  const connect = connectCaller(s.sidecar.url);
  try {
    const start = Date.now();
    // gRPC: 2 calls in 5 without a deadline; Connect: every call with one.
    const [g, c] = await Promise.all([
      send(grpc, 300, (i) => ({ operation: 'GetOrder', id: orderId(i), ...(i % 5 < 2 ? {} : { deadlineMs: 2000 }) }), { spreadMs: 5000 }),
      send(connect, 100, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 5000 }),
    ]);
    assert.deepEqual([g.byCode, c.byCode], [{ OK: 300 }, { OK: 100 }]);
    await waitScraped(s.prometheus, s);
    const run = await diagnose(s.prometheus, ['--namespace', 'nodeadline', '--since', sinceOf(start)]);
    const f = only(run, 'calls_without_deadline');
    const rows = f.figures.rows as Array<{ protocol: string; method: string; share: number; without_deadline: number; calls: number }>;
    assert.deepEqual(rows.map((r) => [r.protocol, r.method]), [['grpc', 'order.v1.OrderService/GetOrder']]);
    near(rows[0]!.share, 120 / 300, 0.02, 'the share without a deadline');
    near(rows[0]!.without_deadline, 120, 12, 'calls without a deadline');
    assert.equal(f.severity, 'warning');
    assert.equal(run.code, 1);
  } finally {
    grpc.close();
    connect.close();
    await s.stop();
    await app.close();
  }
});

test('a client cancel storm: client CANCEL resets, none at a deadline; exit 2', { timeout: 120_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const s = await startScriptedPod({ namespace: 'cancels', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR] });
  const grpc = grpcCaller(s.sidecar.url);
  try {
    const start = Date.now();
    // Half the calls are watches their client leaves after 100 ms: an RST_STREAM(CANCEL) each.
    const t = await send(grpc, 200, (i) => (i % 2 === 0 ? { operation: 'WatchOrders', cancelAfterMs: 100, deadlineMs: 30_000 } : { operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 5000, concurrency: 8 });
    assert.deepEqual(t.byCode, { OK: 100, CANCELLED: 100 });
    await waitScraped(s.prometheus, s);
    const run = await diagnose(s.prometheus, ['--namespace', 'cancels', '--since', sinceOf(start)]);
    const f = only(run, 'client_cancels');
    near((f.figures.resets as Record<string, number>)['client/CANCEL'] ?? 0, 100, 10, 'client CANCEL resets');
    assert.equal(f.figures.at_deadline, 0);
    assert.equal(f.severity, 'critical');
    assert.equal(run.code, 2);
  } finally {
    grpc.close();
    await s.stop();
    await app.close();
  }
});

test('an upstream refusing streams: upstream REFUSED_STREAM told apart from cancels; exit 2', { timeout: 120_000 }, async () => {
  const app = await startRefusingUpstream();
  const s = await startScriptedPod({ namespace: 'refusing', service: 'orders', args: ['--upstream', app.url] });
  const session = http2.connect(s.sidecar.url);
  try {
    const start = Date.now();
    const codes: Record<string, number> = {};
    for (let i = 0; i < 200; i++) {
      const code = await grpcCall(session, i % 4 === 0 ? '/refuse/Call' : '/ok.v1.Svc/Call');
      codes[code] = (codes[code] ?? 0) + 1;
      if (i % 40 === 39) await new Promise((r) => setTimeout(r, 1000));
    }
    assert.equal(codes['0'], 150);
    await waitScraped(s.prometheus, s);
    const run = await diagnose(s.prometheus, ['--namespace', 'refusing', '--since', sinceOf(start)]);
    const f = only(run, 'upstream_refusing');
    // One reset per call the client saw refused; the app refused each twice, the sidecar's transparent retry included.
    const refusedCalls = 200 - codes['0']!;
    assert.equal(refusedCalls, 50);
    assert.equal((f.figures.resets as Record<string, number>)['upstream/REFUSED_STREAM'], refusedCalls);
    assert.equal(app.refused(), 2 * refusedCalls);
    assert.equal(f.severity, 'critical');
    assert.equal(run.code, 2);
  } finally {
    session.close();
    await s.stop();
    await app.close();
  }
});

test('a slow tail of a few calls is no protocol regression: a p99 is read only from 500 calls a side', { timeout: 120_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const s = await startScriptedPod({ namespace: 'tail', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR] });
  const rest = restCaller(s.sidecar.url);
  const grpc = grpcCaller(s.sidecar.url);
  try {
    const start = Date.now();
    // 4 of 300 gRPC calls take 300 ms more: p99 lands in their bucket, p50 does not move.
    const slow = (i: number): boolean => i % 75 === 74;
    const [g, r] = await Promise.all([
      send(grpc, 300, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000, ...(slow(i) ? { headers: { [DELAY_HEADER]: '300' } } : {}) }), { spreadMs: 5000 }),
      send(rest, 300, (i) => ({ operation: 'GetOrder', id: orderId(i) }), { spreadMs: 5000 }),
    ]);
    assert.deepEqual([g.byCode, r.byCode], [{ OK: 300 }, { OK: 300 }]);
    assert.ok(g.seconds[Math.ceil(0.99 * g.seconds.length) - 1]! > 0.3, 'the clients saw the slow tail');
    await waitScraped(s.prometheus, s);
    const run = await diagnose(s.prometheus, ['--namespace', 'tail', '--since', sinceOf(start)]);
    assert.deepEqual(run.report.findings.map((f) => f.title), []);
    assert.equal(run.code, 0);
  } finally {
    rest.close();
    grpc.close();
    await s.stop();
    await app.close();
  }
});

const CALLS_A_SIDE = 600;

test('a regression after a switch of protocol: REST before, slower gRPC after; exit 2', { timeout: 120_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const s = await startScriptedPod({ namespace: 'migration', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR] });
  const rest = restCaller(s.sidecar.url);
  const grpc = grpcCaller(s.sidecar.url);
  try {
    const restStart = Date.now();
    // 600 calls a side: diagnose reads a p99 only from 5 calls past it (500 calls), and the count it reads
    // over its window is Prometheus's increase(), which may come out a few calls short of what was sent.
    const before = await send(rest, CALLS_A_SIDE, (i) => ({ operation: 'GetOrder', id: orderId(i) }), { spreadMs: 5000 });
    await new Promise((r) => setTimeout(r, 2000));
    const grpcStart = Date.now();
    // The new path takes 150 ms longer per call.
    const after = await send(grpc, CALLS_A_SIDE, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000, headers: { [DELAY_HEADER]: '150' } }), { spreadMs: 5000, concurrency: 16 });
    assert.deepEqual([before.byCode, after.byCode], [{ OK: CALLS_A_SIDE }, { OK: CALLS_A_SIDE }]);
    await waitScraped(s.prometheus, s);
    const sinceS = Math.ceil((Date.now() - grpcStart) / 1000) + 1;
    const fromS = Math.ceil((Date.now() - restStart) / 1000) + 1;
    const run = await diagnose(s.prometheus, ['--namespace', 'migration', '--since', `${sinceS}s`, '--before', `${fromS}s..${sinceS}s`]);
    const f = only(run, 'migration_regression');
    assert.deepEqual([f.figures.protocol_before, f.figures.protocol_after], ['rest', 'grpc']);
    const p99 = (f.figures.changes as Array<{ metric: string; value: number; reference: number }>).find((c) => c.metric === 'p99');
    // Against the tally: a call's time at the sidecar is part of its time at the client, so each p99 the
    // sidecars give lies at or under the upper bound of the latency bucket (standard) holding the clients' own.
    const clientP99 = (t: typeof after): number => t.seconds[Math.ceil(0.99 * t.seconds.length) - 1]!;
    const upperBound = (v: number): number => [0.005, 0.025, 0.05, 0.1, 0.25, 1, 2.5, Infinity].find((le) => v <= le)!;
    assert.ok(p99 !== undefined && p99.value > 0.15 && p99.value <= upperBound(clientP99(after)), `p99 after ${p99?.value}, the clients' ${clientP99(after)}`);
    assert.ok(p99.reference <= upperBound(clientP99(before)), `p99 before ${p99.reference}, the clients' ${clientP99(before)}`);
    assert.equal(f.severity, 'critical');
    assert.equal(run.code, 2);
  } finally {
    rest.close();
    grpc.close();
    await s.stop();
    await app.close();
  }
});

test('shadow mismatches: the next version answering differently, counted as the script sent them; exit 1', { timeout: 120_000 }, async () => {
  const store = new OrderStore(24, 24);
  const app = await startOrderService({ latencyScale: 0, store });
  const v2 = await startOrderService({ latencyScale: 0, store, version: 'v2' });
  const s = await startScriptedPod({ namespace: 'shadow', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR, '--shadow', v2.url] });
  const rest = restCaller(s.sidecar.url);
  try {
    // Which orders v2 answers differently, asked of both versions directly.
    const differs: string[] = [];
    const same: string[] = [];
    for (let i = 0; i < 24; i++) {
      const [a, b] = await Promise.all([app.url, v2.url].map(async (u) => (await fetch(`${u}/v1/orders/${orderId(i)}`)).text()));
      (a === b ? same : differs).push(orderId(i));
    }
    assert.ok(differs.length > 0 && same.length > 0, `some orders differ between v1 and v2: ${differs.length} of 24`);
    const start = Date.now();
    const t = await send(rest, 200, (i) => ({ operation: 'GetOrder', id: i % 4 === 0 ? differs[i % differs.length]! : same[i % same.length]! }), { spreadMs: 5000 });
    assert.deepEqual(t.byCode, { OK: 200 });
    // The mirror goes after the answer: give the last ones time to be compared.
    await new Promise((r) => setTimeout(r, 1000));
    await waitScraped(s.prometheus, s);
    await new Promise((r) => setTimeout(r, 1500));
    const run = await diagnose(s.prometheus, ['--namespace', 'shadow', '--since', sinceOf(start)]);
    const f = only(run, 'shadow_mismatch');
    near(f.figures.mismatch as number, 50, 6, 'mismatches');
    near(f.figures.match as number, 150, 15, 'matches');
    assert.equal(f.severity, 'warning');
    assert.equal(run.code, 1);
  } finally {
    rest.close();
    await s.stop();
    await Promise.all([app.close(), v2.close()]);
  }
});

test('Prometheus out of reach: exit 3 with one line saying why', async () => {
  const port = await freePort();
  const run = await runCli(['diagnose', '--prometheus', `http://127.0.0.1:${port}`]);
  assert.equal(run.code, 3);
  assert.equal(run.stdout, '');
  assert.equal(run.stderr, `rpcscope diagnose: cannot reach Prometheus at http://127.0.0.1:${port}: ECONNREFUSED\n`);
});
