// OrderService over every RPC transport and over REST by its google.api.http
// rules: the same answers and errors from each, and x-pod on every response.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import type { Client } from '@connectrpc/connect';
import { DELAY_HEADER, FAIL_CODE_HEADER, OrderService, startOrderService } from '../src/index.ts';
import type { Upstream } from '../src/index.ts';
import { OrderEvent_Kind } from '../src/gen/order/v1/order_pb.ts';
import { rpcTransports } from './rpc-transports.ts';

async function failureOf(call: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await call();
  } catch (err) {
    return ConnectError.from(err);
  }
  assert.fail('the call succeeded');
}

describe('order service', () => {
  let upstream: Upstream;
  before(async () => {
    upstream = await startOrderService({ podName: 'orders-7f9c-abcde', latencyScale: 0 });
  });
  after(() => upstream.close());

  for (const transport of rpcTransports) {
    describe(transport.name, () => {
      let client: Client<typeof OrderService>;
      before(() => {
        client = createClient(OrderService, transport.make(upstream.url));
      });

      test('GetOrder answers a seeded order, with x-pod', async () => {
        let pod: string | null = null;
        const order = await client.getOrder({ id: 'ord-000001' }, { onHeader: (h) => (pod = h.get('x-pod')) });
        assert.equal(order.id, 'ord-000001');
        assert.equal(order.customer, 'acme');
        assert.equal(pod, 'orders-7f9c-abcde');
      });

      test('ListOrders filters by customer and honours page_size', async () => {
        const res = await client.listOrders({ customer: 'globex', pageSize: 2 });
        assert.equal(res.orders.length, 2);
        assert.ok(res.orders.every((o) => o.customer === 'globex'));
      });

      test('CreateOrder stores the order and totals it', async () => {
        const created = await client.createOrder({ customer: 'wayne', items: [{ sku: 'sku-cable', quantity: 3, unitPriceCents: 499n }] });
        assert.equal(created.totalCents, 1497n);
        assert.equal((await client.getOrder({ id: created.id })).customer, 'wayne');
      });

      test('an unknown id is NOT_FOUND and an empty order INVALID_ARGUMENT', async () => {
        assert.equal((await failureOf(() => client.getOrder({ id: 'ord-999999' }))).code, Code.NotFound);
        assert.equal((await failureOf(() => client.createOrder({ customer: 'x' }))).code, Code.InvalidArgument);
      });

      test('x-fail-code fails the call with that code', async () => {
        const err = await failureOf(() => client.getOrder({ id: 'ord-000001' }, { headers: { [FAIL_CODE_HEADER]: String(Code.Unavailable) } }));
        assert.equal(err.code, Code.Unavailable);
      });

      test('x-delay-ms past the deadline ends in DEADLINE_EXCEEDED', async () => {
        const err = await failureOf(() => client.listOrders({}, { headers: { [DELAY_HEADER]: '2000' }, timeoutMs: 50 }));
        assert.equal(err.code, Code.DeadlineExceeded);
      });

      test('WatchOrders replays existing orders up to max_events', async () => {
        const events = [];
        for await (const event of client.watchOrders({ maxEvents: 3, customer: 'acme' })) events.push(event);
        assert.equal(events.length, 3);
        assert.ok(events.every((e) => e.kind === OrderEvent_Kind.EXISTING && e.order?.customer === 'acme'));
      });
    });
  }

  test('WatchOrders follows orders created while it runs', async () => {
    const client = createClient(OrderService, rpcTransports.find((t) => t.protocol === 'grpc')!.make(upstream.url));
    const items = [{ sku: 'sku-dock', quantity: 1 }];
    const stream = client.watchOrders({ maxEvents: 2, customer: 'watched-customer' })[Symbol.asyncIterator]();
    const firstEvent = stream.next();
    // The first order may arrive replayed or live, depending on when the watch subscribed;
    // once it has arrived the watch is live, so the second must come as CREATED.
    const first = await client.createOrder({ customer: 'watched-customer', items });
    assert.equal((await firstEvent).value?.order?.id, first.id);
    const second = await client.createOrder({ customer: 'watched-customer', items });
    const event = (await stream.next()).value;
    assert.deepEqual([event?.kind, event?.order?.id], [OrderEvent_Kind.CREATED, second.id]);
    assert.equal((await stream.next()).done, true);
  });

  describe('REST by the google.api.http rules', () => {
    test('GET /v1/orders/{id} answers the order in proto3 JSON, with x-pod', async () => {
      const res = await fetch(`${upstream.url}/v1/orders/ord-000002`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-pod'), 'orders-7f9c-abcde');
      const order = (await res.json()) as Record<string, unknown>;
      assert.equal(order.id, 'ord-000002');
      assert.equal(order.customer, 'globex');
      assert.equal(order.totalCents, '3998');
    });

    test('GET /v1/orders takes page_size and customer from the query', async () => {
      const res = await fetch(`${upstream.url}/v1/orders?page_size=3&customer=initech`);
      const body = (await res.json()) as { orders: Array<{ customer: string }> };
      assert.equal(body.orders.length, 3);
      assert.ok(body.orders.every((o) => o.customer === 'initech'));
    });

    test('POST /v1/orders creates from the whole body', async () => {
      const res = await fetch(`${upstream.url}/v1/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ customer: 'rest-customer', items: [{ sku: 'sku-mouse', quantity: 2, unitPriceCents: '1999' }] }),
      });
      assert.equal(res.status, 200);
      const order = (await res.json()) as { id: string; totalCents: string };
      assert.equal(order.totalCents, '3998');
      assert.equal((await fetch(`${upstream.url}/v1/orders/${order.id}`)).status, 200);
    });

    test('errors carry the transcoding HTTP status and a google.rpc.Status body', async () => {
      const missing = await fetch(`${upstream.url}/v1/orders/ord-999999`);
      assert.equal(missing.status, 404);
      assert.deepEqual(await missing.json(), { code: Code.NotFound, message: 'order ord-999999 not found', details: [] });

      const invalid = await fetch(`${upstream.url}/v1/orders`, { method: 'POST', body: '{"customer":' });
      assert.equal(invalid.status, 400);
      await invalid.body?.cancel();

      const failed = await fetch(`${upstream.url}/v1/orders`, { headers: { [FAIL_CODE_HEADER]: String(Code.ResourceExhausted) } });
      assert.equal(failed.status, 429);
      await failed.body?.cancel();
    });
  });
});
