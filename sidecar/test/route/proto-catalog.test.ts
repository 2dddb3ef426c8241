import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadProtoDir } from '../../src/route/proto-catalog.ts';
import { restMethodLabel } from '../../src/route/route-template.ts';
import { tempFile } from './temp-files.ts';

const protos = join(import.meta.dirname, '../fixtures/protos');

test('streaming shapes of every method in every file, by full name', () => {
  const { shapes } = loadProtoDir(protos);
  assert.deepEqual(Object.fromEntries(shapes), {
    'acme.inventory.v2.Stock/Reserve': 'unary',
    'acme.inventory.v2.Stock/Files': 'unary',
    'order.v1.OrderService/GetOrder': 'unary',
    'order.v1.OrderService/CreateOrder': 'unary',
    'order.v1.OrderService/UpdateOrder': 'unary',
    'order.v1.OrderService/CancelOrder': 'unary',
    'order.v1.OrderService/WatchOrders': 'server_streaming',
    'order.v1.OrderService/ImportOrders': 'client_streaming',
    'order.v1.OrderService/Chat': 'bidi_streaming',
  });
});

test('google.api.http bindings are REST routes whose operation is the RPC method', () => {
  const { routes, operations } = loadProtoDir(protos);
  assert.deepEqual(routes.map(restMethodLabel), [
    'POST /v2/stock/{sku}:reserve',
    'GET /v2/files/{path=**}',
    'GET /v1/orders/{id}',
    'POST /v1/orders',
    'POST /v1/shops/{shop_id}/orders',
    'PATCH /v1/shops/{order.name}/orders/{order.name}',
    'POST /v1/orders/{name}:cancel',
    'HEAD /v1/orders/{name}:cancel',
    'DELETE /v1/orders/{name}',
  ]);
  assert.equal(operations.lookup('GET /v1/orders/{id}'), 'order.v1.OrderService/GetOrder');
  assert.equal(operations.lookup('POST /v1/shops/{shop}/orders'), 'order.v1.OrderService/CreateOrder');
  assert.equal(operations.lookup('HEAD /v1/orders/{x}:cancel'), 'order.v1.OrderService/CancelOrder');
  assert.equal(operations.lookup('POST /v2/stock/{sku}:reserve'), 'acme.inventory.v2.Stock/Reserve');
  assert.equal(operations.lookup('GET /v1/orders'), undefined);
});

test('errors name the .proto file', () => {
  const syntax = tempFile('protos-syntax/a/bad.proto', 'syntax = "proto3";\nservice {\n');
  assert.throws(() => loadProtoDir(join(syntax, '../..')), new RegExp(`^Error: ${syntax}: illegal service name`));
  const rule = tempFile('protos-rule/bad.proto', 'syntax = "proto3"; package p;\nservice S { rpc M(R) returns (R) { option (google.api.http) = { get: "/v1/{x=**}/y" }; } }\nmessage R {}\n');
  assert.throws(() => loadProtoDir(join(rule, '..')), { message: `${rule}: p.S/M (google.api.http): path "/v1/{x=**}/y": template "/v1/{x=**}/y": "{x=**}" must be the last segment` });
  const twice = tempFile('protos-twice/t.proto', 'syntax = "proto3"; package p;\nservice S {\n rpc A(R) returns (R) { option (google.api.http) = { get: "/v1/{id}" }; }\n rpc B(R) returns (R) { option (google.api.http) = { get: "/v1/{name}" }; }\n}\nmessage R {}\n');
  assert.throws(() => loadProtoDir(join(twice, '..')), { message: `${twice}: "GET /v1/{name}" is bound to both p.S/A and p.S/B` });
  const empty = join(tempFile('protos-empty/readme.txt', 'no protos'), '..');
  assert.throws(() => loadProtoDir(empty), { message: `${empty}: no .proto files found` });
  assert.throws(() => loadProtoDir(join(protos, 'missing')), new RegExp(`^Error: ${join(protos, 'missing')}: cannot list .proto files: ENOENT`));
});
