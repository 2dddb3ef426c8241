// `rpcscope top` through real traffic: from two sidecars' admin ports (one per
// data plane) and from Prometheus, printed as plain lines when stdout is not a
// terminal, per operation and protocol and per pod.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PROTO_DIR, startOrderService } from '@rpcscope/demo';
import { grpcCaller } from '@rpcscope/demo/story-callers';
import { startSidecarProcess } from '../support/sidecar-process.ts';
import { runCli } from './cli-process.ts';
import { orderId, send, startScriptedPod } from './scripted-fleet.ts';

const line = (out: string, re: RegExp): RegExpMatchArray[] => out.split('\n').map((l) => re.exec(l)).filter((m): m is RegExpExecArray => m !== null);

test('top over two sidecars (relay and terminate): rate, success, p50/p99 per operation and protocol; share and skew per pod', { timeout: 90_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const relay = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR, '--data-plane', 'relay'], { POD_NAME: 'orders-0' });
  const terminate = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR, '--data-plane', 'terminate'], { POD_NAME: 'orders-1' });
  const a = grpcCaller(relay.url);
  const b = grpcCaller(terminate.url);
  try {
    // Three calls through the relay for every one through the terminating sidecar, for the whole run of `top`.
    const traffic = Promise.all([
      send(a, 450, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 9000, concurrency: 2 }),
      send(b, 150, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 9000, concurrency: 2 }),
    ]);
    await new Promise((r) => setTimeout(r, 1000));
    const run = await runCli(['top', '--admin', new URL(relay.adminUrl).host, '--admin', new URL(terminate.adminUrl).host, '--iterations', '4', '--interval', '1s']);
    await traffic;
    assert.equal(run.code, 0, run.stderr);
    const rows = line(run.stdout, /^\S+ order\.v1\.OrderService\/GetOrder grpc rate=([\d.]+) success=([\d.]+) p50_ms=([\d.]+) p99_ms=([\d.]+) active=\d+ bytes_per_call=(\d+)$/u);
    assert.equal(rows.length, 4, run.stdout);
    for (const [, rate, success, p50, p99, bytes] of rows) {
      assert.ok(Number(rate) > 20 && Number(rate) < 140, `rate ${rate}`);
      assert.equal(success, '1.0000');
      assert.ok(Number(p50) > 0 && Number(p99) >= Number(p50));
      assert.ok(Number(bytes) > 0);
    }
    const pods = line(run.stdout, /^\S+ pod (orders-\d) share=([\d.]+) rate=[\d.]+ skew=([\d.]+)$/u);
    const share = (pod: string): number => pods.filter((p) => p[1] === pod).reduce((s, p) => s + Number(p[2]), 0) / 4;
    // The busier sidecar has the larger share; both together have them all.
    assert.ok(share('orders-0') > share('orders-1') && share('orders-1') > 0, `shares ${share('orders-0')}, ${share('orders-1')}`);
    assert.ok(Math.abs(share('orders-0') + share('orders-1') - 1) < 0.001);
  } finally {
    a.close();
    b.close();
    await Promise.all([relay.stop(), terminate.stop()]);
    await app.close();
  }
});

test('top from Prometheus: the same table over its window', { timeout: 90_000 }, async () => {
  const app = await startOrderService({ latencyScale: 0 });
  const s = await startScriptedPod({ namespace: 'top', service: 'orders', args: ['--upstream', app.url, '--proto', PROTO_DIR] });
  const grpc = grpcCaller(s.sidecar.url);
  try {
    await send(grpc, 300, (i) => ({ operation: 'GetOrder', id: orderId(i), deadlineMs: 2000 }), { spreadMs: 5000 });
    await new Promise((r) => setTimeout(r, 2000));
    const run = await runCli(['top', '--prometheus', s.prometheus.url, '--namespace', 'top', '--service', 'orders', '--window', '30s', '--iterations', '1']);
    assert.equal(run.code, 0, run.stderr);
    const [row] = line(run.stdout, /^\S+ order\.v1\.OrderService\/GetOrder grpc rate=([\d.]+) success=1\.0000 /u);
    assert.ok(row !== undefined && Number(row[1]) > 3, run.stdout);
    assert.match(run.stdout, /pod orders-0 share=1\.0000 /u);
  } finally {
    grpc.close();
    await s.stop();
    await app.close();
  }
});
