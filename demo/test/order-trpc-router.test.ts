// The order service's tRPC procedures, called by @trpc/client's httpBatchLink
// straight and through the real sidecar: the same answers and errors as the
// other protocols, and through the sidecar one call per procedure of a batch,
// under the operation of its gRPC twin.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTRPCClient, httpBatchLink, TRPCClientError, type TRPCClient } from '@trpc/client';
import '../../test/support/sidecar-process.ts';
import { IDEMPOTENCY_HEADER, OrderStore, startOrderService, type OrderTrpcRouter, type Upstream } from '../src/index.ts';
import { parseExposition, sum, type Sample } from '../src/metrics-text.ts';
import { ORDER_OPERATIONS, PROTO_DIR } from '../src/proto-files.ts';
import { startSidecarProcess, type SidecarProcess } from '../src/sidecar-process.ts';

const trpcClient = (url: string, headers: Record<string, string> = {}): TRPCClient<OrderTrpcRouter> =>
  createTRPCClient<OrderTrpcRouter>({ links: [httpBatchLink({ url: `${url}/trpc`, headers: () => headers })] });

async function trpcCode(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
  } catch (err) {
    assert.ok(err instanceof TRPCClientError, String(err));
    return (err.data as { code?: string } | undefined)?.code;
  }
  assert.fail('the call succeeded');
}

/** The sidecar's metrics once no call is open: a client may see its answer a moment before the sidecar records the call's end. */
async function settledMetrics(adminUrl: string): Promise<Sample[]> {
  for (let tries = 0; ; tries++) {
    const samples = parseExposition(await (await fetch(`${adminUrl}/metrics`)).text());
    if (sum(samples, 'rpcscope_calls_active') === 0 || tries >= 50) return samples;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('order service over tRPC', () => {
  let store: OrderStore;
  let v1: Upstream;
  let v2: Upstream;
  let sidecar: SidecarProcess;
  before(async () => {
    store = new OrderStore(24, 24);
    v1 = await startOrderService({ podName: 'orders-0', latencyScale: 0, store });
    v2 = await startOrderService({ podName: 'orders-v2', latencyScale: 0, store, version: 'v2' });
    sidecar = await startSidecarProcess(['--upstream', v1.url, '--proto', PROTO_DIR, '--operations', ORDER_OPERATIONS]);
  });
  after(async () => {
    await sidecar?.stop();
    await Promise.all([v1?.close(), v2?.close()]);
  });

  test('queries and a mutation answer as the other protocols do, errors as tRPC codes', async () => {
    const client = trpcClient(v1.url);
    const order = (await client.order.getOrder.query({ id: 'ord-000002' })) as { id: string; customer: string; totalCents: string };
    assert.equal(order.id, 'ord-000002');
    assert.equal(order.customer, 'globex');
    assert.match(order.totalCents, /^\d+$/, 'int64 as a string, as in the proto3 JSON mapping');
    assert.equal(await trpcCode(client.order.getOrder.query({ id: 'ord-999999' })), 'NOT_FOUND');
    assert.equal(await trpcCode(client.order.getOrder.query({ id: '' })), 'BAD_REQUEST');
    const listed = (await client.order.listOrders.query({ pageSize: 3, customer: 'initech' })) as Array<{ customer: string }>;
    assert.deepEqual(listed.map((o) => o.customer), ['initech', 'initech', 'initech']);
    const created = (await client.order.createOrder.mutate({ customer: 'wayne', items: [{ sku: 'sku-cable', quantity: 3, unitPriceCents: '499' }] })) as { totalCents: string };
    assert.equal(created.totalCents, '1497');
  });

  test('a create repeated with its idempotency key, on another instance of the store, answers the same order', async () => {
    const input = { customer: 'acme', items: [{ sku: 'sku-cable', quantity: 1, unitPriceCents: '499' }] };
    const first = (await trpcClient(v1.url, { [IDEMPOTENCY_HEADER]: 'k-1' }).order.createOrder.mutate(input)) as { id: string };
    const again = (await trpcClient(v2.url, { [IDEMPOTENCY_HEADER]: 'k-1' }).order.createOrder.mutate(input)) as { id: string };
    assert.equal(again.id, first.id);
    const other = (await trpcClient(v1.url, { [IDEMPOTENCY_HEADER]: 'k-2' }).order.createOrder.mutate(input)) as { id: string };
    assert.notEqual(other.id, first.id);
  });

  test("v2 gives shipped orders' carrier by its new code, and answers every other order as v1", async () => {
    // Seeded statuses cycle pending, paid, shipped, cancelled: ord-000003 is shipped.
    const get = async (url: string, id: string) => ((await trpcClient(url).order.getOrder.query({ id })) as { carrier: string; status: string });
    const [shipped1, shipped2] = [await get(v1.url, 'ord-000003'), await get(v2.url, 'ord-000003')];
    assert.equal(shipped1.status, 'ORDER_STATUS_SHIPPED');
    assert.deepEqual([shipped1.carrier, shipped2.carrier], ['united-parcel-ground', 'ups-ground']);
    assert.deepEqual(await get(v2.url, 'ord-000001'), await get(v1.url, 'ord-000001'));
  });

  test('through the sidecar a batch of three procedures is three calls under their gRPC twins\' operations', async () => {
    const client = trpcClient(sidecar.url);
    const results = await Promise.allSettled([
      client.order.getOrder.query({ id: 'ord-000001' }),
      client.order.getOrder.query({ id: 'ord-999999' }),
      client.order.listOrders.query({ pageSize: 2, customer: '' }),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
    const samples = await settledMetrics(sidecar.adminUrl);
    const calls = (where: Record<string, string>) => sum(samples, 'rpcscope_calls_total', { protocol: 'trpc', ...where });
    assert.equal(calls({ operation: 'order.v1.OrderService/GetOrder', method: 'order.getOrder', code: 'OK' }), 1);
    assert.equal(calls({ operation: 'order.v1.OrderService/GetOrder', method: 'order.getOrder', code: 'NOT_FOUND' }), 1);
    assert.equal(calls({ operation: 'order.v1.OrderService/ListOrders', method: 'order.listOrders', code: 'OK' }), 1);
    // One HTTP request carried them.
    assert.equal(sum(samples, 'rpcscope_upstream_calls_total', {}), 1);
  });
});
