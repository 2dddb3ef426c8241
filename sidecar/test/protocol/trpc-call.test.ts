// tRPC through the sidecar with real peers: @trpc/server's standalone adapter
// behind it, @trpc/client's httpLink, httpBatchLink, httpBatchStreamLink and
// httpSubscriptionLink in front. Each procedure is a call of its own on
// /metrics (`protocol="trpc"`, `method` = its path) with the outcome its result
// or error said, and a batch of N counts N calls.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink, httpSubscriptionLink, splitLink, TRPCClientError } from '@trpc/client';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { EventSource } from 'eventsource';
import { loadConfig } from '../../src/config/load.ts';
import { createLogger } from '../../src/log.ts';
import { noopTracing } from '../../src/call/call-tracing.ts';
import { createMetricsObserver, type MetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { startSidecar, type Sidecar } from '../../src/pipeline.ts';

// tRPC's own JSON lines encoder and decoder take seconds over a few MiB: half a MiB keeps the test quick.
const BIG = 512 * 1024;

const t = initTRPC.create();
const appRouter = t.router({
  order: t.router({
    get: t.procedure.input((v) => v as { id: number }).query(({ input }) => {
      if (input.id === 404) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such order' });
      return { id: input.id, item: 'tea' };
    }),
    create: t.procedure.input((v) => v as { item: string }).mutation(({ input }) => {
      if (input.item === '') throw new TRPCError({ code: 'BAD_REQUEST', message: 'item is empty' });
      return { id: 7, item: input.item };
    }),
    slow: t.procedure.query(async () => {
      await new Promise((r) => setTimeout(r, 150));
      return 'slow';
    }),
    big: t.procedure.query(() => 'x'.repeat(BIG)),
    denied: t.procedure.query(() => {
      throw new TRPCError({ code: 'FORBIDDEN' });
    }),
    broken: t.procedure.query(() => {
      throw new Error('a bug');
    }),
    ticks: t.procedure.subscription(async function* () {
      for (let i = 0; i < 3; i++) yield i;
    }),
  }),
});
type AppRouter = typeof appRouter;

function series(text: string, method: string, code?: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('rpcscope_calls_total{') || !line.includes('protocol="trpc"') || !line.includes(`method="${method}"`)) continue;
    if (code !== undefined && !line.includes(`code="${code}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('tRPC through the sidecar', () => {
  let upstream: ReturnType<typeof createHTTPServer>;
  let sidecar: Sidecar;
  let metrics: MetricsObserver;
  let url: string;
  let adminUrl: string;

  const scrape = async (): Promise<string> => (await fetch(`${adminUrl}/metrics`)).text();
  /** Calls end a moment after the client has its answer: wait for the count to arrive. */
  const eventually = async (check: (text: string) => void): Promise<string> => {
    const deadline = Date.now() + 5000;
    for (;;) {
      const text = await scrape();
      try {
        check(text);
        return text;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 25));
      }
    }
  };

  before(async () => {
    upstream = createHTTPServer({ router: appRouter, basePath: '/trpc/' });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const up = upstream.address() as AddressInfo;
    const result = loadConfig(['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', `http://127.0.0.1:${up.port}`, '--log-level', 'silent', '--drain-timeout', '1s'], {});
    if (result.kind !== 'run') throw new Error('unexpected help');
    metrics = createMetricsObserver({ router: new Router({ maxMethods: result.config.maxMethods }) });
    sidecar = await startSidecar(result.config, createLogger('silent'), () => ({
      observers: [metrics],
      tracing: noopTracing,
      adminHandlers: new Map([['/metrics', (req, res) => metrics.handleMetrics(req, res)]]),
      shutdown: () => metrics.shutdown(),
    }));
    url = `http://127.0.0.1:${sidecar.proxyAddress.port}/trpc`;
    adminUrl = `http://127.0.0.1:${sidecar.adminAddress.port}`;
  });
  after(async () => {
    await sidecar.drain();
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it('httpLink: a query and a mutation are one call each, failures by their tRPC code', async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpLink({ url })] });
    assert.deepEqual(await client.order.get.query({ id: 1 }), { id: 1, item: 'tea' });
    assert.deepEqual(await client.order.create.mutate({ item: 'cake' }), { id: 7, item: 'cake' });
    await assert.rejects(client.order.get.query({ id: 404 }), (e: unknown) => e instanceof TRPCClientError && e.data?.code === 'NOT_FOUND');
    await assert.rejects(client.order.create.mutate({ item: '' }), (e: unknown) => e instanceof TRPCClientError && e.data?.code === 'BAD_REQUEST');
    const text = await eventually((m) => {
      assert.equal(series(m, 'order.get', 'OK'), 1);
      assert.equal(series(m, 'order.get', 'NOT_FOUND'), 1);
      assert.equal(series(m, 'order.create', 'OK'), 1);
      assert.equal(series(m, 'order.create', 'INVALID_ARGUMENT'), 1);
    });
    assert.match(text, /rpcscope_calls_total\{direction="inbound",protocol="trpc",encoding="json",method="order.get",operation="order.get",code="NOT_FOUND",http_status="404"\} 1/);
    assert.match(text, /rpcscope_call_duration_seconds_count\{direction="inbound",protocol="trpc",encoding="json",method="order.get",operation="order.get"\} 2/);
  });

  it('httpBatchLink: a batch of five procedures counts five calls, each with its own outcome, one HTTP call upstream', async () => {
    const before = await scrape();
    const upstreamBefore = upstreamCalls(before);
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url })] });
    const results = await Promise.allSettled([
      client.order.get.query({ id: 2 }),
      client.order.get.query({ id: 404 }),
      client.order.denied.query(),
      client.order.broken.query(),
      client.order.slow.query(),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    const text = await eventually((m) => {
      assert.equal(series(m, 'order.get', 'OK') - series(before, 'order.get', 'OK'), 1);
      assert.equal(series(m, 'order.get', 'NOT_FOUND') - series(before, 'order.get', 'NOT_FOUND'), 1);
      assert.equal(series(m, 'order.denied', 'PERMISSION_DENIED'), 1);
      assert.equal(series(m, 'order.broken', 'INTERNAL'), 1);
      assert.equal(series(m, 'order.slow', 'OK'), 1);
    });
    // A mixed batch is answered 207 Multi-Status; every procedure in it says so.
    assert.match(text, /method="order.denied",operation="order.denied",code="PERMISSION_DENIED",http_status="207"\} 1/);
    assert.equal(upstreamCalls(text) - upstreamBefore, 1, 'the batch is one HTTP call to the upstream');
  });

  it('httpBatchStreamLink: a streamed batch counts each procedure as it settles, and a large answer streams through', async () => {
    const before = await scrape();
    const client = createTRPCClient<AppRouter>({ links: [httpBatchStreamLink({ url })] });
    const [fast, slow, denied, big] = await Promise.allSettled([
      client.order.get.query({ id: 3 }),
      client.order.slow.query(),
      client.order.denied.query(),
      client.order.big.query(),
    ]);
    assert.equal(fast.status, 'fulfilled');
    assert.equal(slow.status, 'fulfilled');
    assert.equal(denied.status, 'rejected');
    assert.equal(big.status === 'fulfilled' ? big.value.length : 0, BIG);
    const text = await eventually((m) => {
      assert.equal(series(m, 'order.get', 'OK') - series(before, 'order.get', 'OK'), 1);
      assert.equal(series(m, 'order.slow', 'OK') - series(before, 'order.slow', 'OK'), 1);
      assert.equal(series(m, 'order.denied', 'PERMISSION_DENIED') - series(before, 'order.denied', 'PERMISSION_DENIED'), 1);
      assert.equal(series(m, 'order.big', 'OK'), 1);
    });
    // The fast procedure settled before the slow one: its latency is its own, under 0.1 s.
    // Each procedure is timed to its own answer, not to the end of the batch: the
    // quick one settled while the slow one still slept.
    const quick = durationSum(text, 'order.get') - durationSum(before, 'order.get');
    const slowest = durationSum(text, 'order.slow') - durationSum(before, 'order.slow');
    assert.ok(quick < slowest, `order.get took ${quick} s, order.slow ${slowest} s`);
  });

  it('httpSubscriptionLink: a subscription over SSE is one streaming call', async () => {
    const client = createTRPCClient<AppRouter>({
      links: [splitLink({ condition: (op) => op.type === 'subscription', true: httpSubscriptionLink({ url, EventSource }), false: httpLink({ url }) })],
    });
    const seen: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const sub = client.order.ticks.subscribe(undefined, {
        onData: (n) => seen.push(n),
        onError: reject,
        onComplete: () => {
          sub.unsubscribe();
          resolve();
        },
      });
    });
    assert.deepEqual(seen, [0, 1, 2]);
    await eventually((m) => {
      assert.equal(series(m, 'order.ticks'), 1);
      assert.match(m, /rpcscope_stream_duration_seconds_count\{direction="inbound",protocol="trpc",method="order.ticks",stream_type="server_streaming"\} 1/);
    });
  });

  it('a procedure name that is not one, and one past --max-methods, fold into _OTHER; the sidecar keeps serving', async () => {
    const res = await fetch(`${url}/..%2Fetc?input=1`);
    await res.arrayBuffer();
    const client = createTRPCClient<AppRouter>({ links: [httpLink({ url })] });
    assert.deepEqual(await client.order.get.query({ id: 5 }), { id: 5, item: 'tea' });
    await eventually((m) => assert.ok(series(m, '_OTHER') >= 1));
  });
});

function upstreamCalls(text: string): number {
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith('rpcscope_upstream_calls_total{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

function durationSum(text: string, method: string): number {
  const line = text.split('\n').find((l) => l.startsWith('rpcscope_call_duration_seconds_sum{') && l.includes('protocol="trpc"') && l.includes(`method="${method}"`));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}
