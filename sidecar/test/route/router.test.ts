import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { OTHER } from '../../src/route/method-guard.ts';
import { loadOperationsFile } from '../../src/route/operation-map.ts';
import { loadProtoDir } from '../../src/route/proto-catalog.ts';
import { loadRouteFile } from '../../src/route/route-file.ts';
import { Router } from '../../src/route/router.ts';

const fixtures = join(import.meta.dirname, '../fixtures');

test('gRPC family: method from the path, operation equal to it, one interned route per method', () => {
  const router = new Router({ maxMethods: 10 });
  const route = router.resolve('grpc', 'POST', '/order.v1.OrderService/GetOrder');
  assert.deepEqual(route, { protocol: 'grpc', method: 'order.v1.OrderService/GetOrder', operation: 'order.v1.OrderService/GetOrder', shape: undefined });
  assert.equal(router.resolve('grpc', 'POST', '/order.v1.OrderService/GetOrder'), route);
  assert.equal(router.resolve('connect', 'GET', '/order.v1.OrderService/GetOrder').protocol, 'connect');
  assert.equal(router.resolve('grpc_web', 'POST', '/not/a/method').method, OTHER);
});

test('REST: configured templates first, else learned ones', () => {
  const router = new Router({ maxMethods: 10, routes: loadRouteFile(join(fixtures, 'routing/routes.txt')) });
  assert.equal(router.resolve('rest', 'GET', '/v1/orders/42').method, 'GET /v1/orders/{orderId}');
  assert.equal(router.resolve('rest', 'GET', '/v1/orders/search').method, 'GET /v1/orders/search');
  assert.equal(router.resolve('rest', 'GET', '/v1/users/42').method, 'GET /v1/users/{id}');
  assert.equal(router.resolve('rest', 'PURGE', '/v1/users/42').method, OTHER);
  assert.equal(router.resolve('rest', 'GET', '*').method, OTHER);
});

test('the guard is per protocol and keeps early methods', () => {
  const router = new Router({ maxMethods: 2 });
  assert.equal(router.resolve('grpc', 'POST', '/p.S/A').method, 'p.S/A');
  assert.equal(router.resolve('grpc', 'POST', '/p.S/B').method, 'p.S/B');
  const other = router.resolve('grpc', 'POST', '/p.S/C');
  assert.deepEqual(other, { protocol: 'grpc', method: OTHER, operation: OTHER, shape: undefined });
  assert.equal(router.resolve('grpc', 'POST', '/p.S/A').method, 'p.S/A');
  assert.equal(router.resolve('connect', 'POST', '/p.S/C').method, 'p.S/C');
  assert.equal(router.resolve('rest', 'GET', '/a/1').method, 'GET /a/{id}');
  assert.equal(router.resolve('rest', 'GET', '/b/2').method, 'GET /b/{id}');
  assert.equal(router.resolve('rest', 'GET', '/c/3').method, OTHER);
  assert.equal(router.resolve('rest', 'GET', '/a/99').method, 'GET /a/{id}');
});

test('protos and the operations file line REST and RPC up on one operation', () => {
  const router = new Router({
    maxMethods: 100,
    protos: loadProtoDir(join(fixtures, 'protos')),
    operations: loadOperationsFile(join(fixtures, 'routing/operations.yaml')),
  });
  const rest = router.resolve('rest', 'GET', '/v1/orders/42');
  assert.deepEqual(rest, { protocol: 'rest', method: 'GET /v1/orders/{id}', operation: 'GetOrder', shape: undefined });
  assert.equal(router.resolve('grpc', 'POST', '/order.v1.OrderService/GetOrder').operation, 'GetOrder');
  assert.equal(router.resolve('rest', 'POST', '/v1/shops/s1/orders').operation, 'order.v1.OrderService/CreateOrder');
  assert.equal(router.resolve('grpc_web', 'POST', '/order.v1.OrderService/CreateOrder').operation, 'order.v1.OrderService/CreateOrder');
  assert.equal(router.resolve('rest', 'POST', '/v1/orders/o-1:cancel').method, 'POST /v1/orders/{name}:cancel');
  assert.equal(router.resolve('rest', 'GET', '/v1/orders').operation, 'ListOrders', 'a learned-or-configured template maps too');
  const watch = router.resolve('grpc', 'POST', '/order.v1.OrderService/WatchOrders');
  assert.equal(watch.shape, 'server_streaming');
  assert.equal(watch.operation, 'order.v1.OrderService/WatchOrders');
});

test('maxMethods must be a non-negative integer', () => {
  assert.throws(() => new Router({ maxMethods: -1 }), { message: 'maxMethods must be a non-negative integer, got -1' });
  assert.throws(() => new Router({ maxMethods: 1.5 }), { message: 'maxMethods must be a non-negative integer, got 1.5' });
});
