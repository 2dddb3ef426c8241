import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { OperationMap, loadOperationsFile, parseOperations } from '../../src/route/operation-map.ts';
import { tempFile } from './temp-files.ts';

test('the operations file maps REST routes and RPC methods to one operation', () => {
  const map = loadOperationsFile(join(import.meta.dirname, '../fixtures/routing/operations.yaml'));
  assert.equal(map.size, 3);
  assert.equal(map.lookup('GET /v1/orders/{id}'), 'GetOrder');
  assert.equal(map.lookup('order.v1.OrderService/GetOrder'), 'GetOrder');
  assert.equal(map.lookup('GET /v1/orders'), 'ListOrders');
  assert.equal(map.lookup('POST /v1/orders'), undefined);
});

test('parameter names do not matter to the lookup', () => {
  const map = new OperationMap();
  map.add('GET /v1/orders/{id}/items/{item}', 'GetItem');
  map.add('GET /files/{path=**}', 'GetFile');
  assert.equal(map.lookup('GET /v1/orders/{orderId}/items/{itemId}'), 'GetItem');
  assert.equal(map.lookup('GET /files/{p=**}'), 'GetFile');
  assert.equal(map.lookup('GET /files/{p}'), undefined);
});

test('merge: explicit configuration wins over .proto rules', () => {
  const protos = new OperationMap();
  protos.add('GET /v1/orders/{id}', 'order.v1.OrderService/GetOrder');
  protos.add('POST /v1/orders', 'order.v1.OrderService/CreateOrder');
  const config = new OperationMap();
  config.add('GET /v1/orders/{name}', 'GetOrder');
  const merged = OperationMap.merge(protos, config);
  assert.equal(merged.lookup('GET /v1/orders/{x}'), 'GetOrder');
  assert.equal(merged.lookup('POST /v1/orders'), 'order.v1.OrderService/CreateOrder');
});

test('errors name the file, the operation and what is wrong', () => {
  const notMap = tempFile('ops-list.yaml', '- GetOrder\n');
  assert.throws(() => loadOperationsFile(notMap), { message: `${notMap}: expected an "operations:" mapping of operation name to routes and methods` });
  const empty = tempFile('ops-empty.yaml', 'operations:\n  GetOrder: []\n');
  assert.throws(() => loadOperationsFile(empty), { message: `${empty}: operations.GetOrder must be a route or method, or a non-empty list of them` });
  const neither = tempFile('ops-neither.yaml', 'operations:\n  GetOrder: [orders]\n');
  assert.throws(() => loadOperationsFile(neither), {
    message: `${neither}: operations.GetOrder[0]: "orders" is neither a REST route ("GET /v1/orders/{id}") nor an RPC method ("order.v1.OrderService/GetOrder") nor a tRPC procedure ("trpc order.getOrder")`,
  });
  const badMethod = tempFile('ops-method.yaml', 'operations:\n  GetOrder: [FETCH /v1/orders]\n');
  assert.throws(() => loadOperationsFile(badMethod), { message: `${badMethod}: operations.GetOrder[0]: "FETCH" is not an HTTP method (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH)` });
  const twice = tempFile('ops-twice.yaml', 'operations:\n  A: GET /v1/x/{id}\n  B:\n    - GET /v1/x/{xid}\n');
  assert.throws(() => loadOperationsFile(twice), { message: `${twice}: "GET /v1/x/{xid}" is listed under both operations.A and operations.B` });
  const notString = tempFile('ops-num.yaml', 'operations:\n  A: [1]\n');
  assert.throws(() => loadOperationsFile(notString), { message: `${notString}: operations.A[0] is not a string` });
});

test('a tRPC procedure joins an operation as `trpc <procedure>`, beside its REST and gRPC twins', () => {
  const map = parseOperations({ operations: { GetOrder: ['GET /v1/orders/{id}', 'order.v1.OrderService/GetOrder', 'trpc order.get'] } }, 'ops.yaml');
  assert.equal(map.lookup('order.get'), 'GetOrder');
  assert.equal(map.lookup('order.v1.OrderService/GetOrder'), 'GetOrder');
});
