// The metrics label a call by the route it carries (resolved once as it started,
// call/call.ts), not by routing its path again; the access log's route is the
// same object. Only a record with no route is routed here.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { endedCall } from './records.ts';
import { scrape } from './scrape.ts';

describe('metrics: the route carried on the record', () => {
  const metrics = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
  after(() => metrics.shutdown());

  it('labels the call by its carried route, and routes a record that carries none', async () => {
    const carried = new Router({ maxMethods: 100 }).resolve('grpc', 'POST', '/shop.v1.Cart/Checkout');
    const withRoute = endedCall({ path: '/order.v1.OrderService/GetOrder', route: carried });
    const without = endedCall({ path: '/order.v1.OrderService/ListOrders' });
    for (const call of [withRoute, without]) {
      metrics.callStarted(call);
      metrics.callEnded(call);
    }
    assert.equal(metrics.route(withRoute), carried);
    assert.equal(metrics.route(without).method, 'order.v1.OrderService/ListOrders');
    const text = await scrape(metrics);
    const calls = text.split('\n').filter((l) => l.startsWith('rpcscope_calls_total{'));
    assert.equal(calls.length, 2, text);
    assert.ok(calls.some((l) => l.includes('method="shop.v1.Cart/Checkout"')), calls.join('\n'));
    assert.ok(calls.some((l) => l.includes('method="order.v1.OrderService/ListOrders"')), calls.join('\n'));
    assert.ok(!text.includes('GetOrder'), 'the path of a call that carries its route is not routed again');
  });
});
