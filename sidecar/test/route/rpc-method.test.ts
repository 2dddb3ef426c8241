import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRpcMethod, rpcMethodFromPath } from '../../src/route/rpc-method.ts';

test('a well-formed RPC path gives pkg.Service/Method', () => {
  assert.equal(rpcMethodFromPath('/order.v1.OrderService/GetOrder'), 'order.v1.OrderService/GetOrder');
  assert.equal(rpcMethodFromPath('/Greeter/SayHello'), 'Greeter/SayHello');
  assert.equal(rpcMethodFromPath('/grpc.health.v1.Health/Check'), 'grpc.health.v1.Health/Check');
  assert.equal(rpcMethodFromPath('/_pkg.Svc_2/Do_It'), '_pkg.Svc_2/Do_It');
});

test('anything else is not a method', () => {
  for (const bad of [
    '', '/', '/order.v1.OrderService', '/order.v1.OrderService/', '//GetOrder', '/order.v1.OrderService/GetOrder/x',
    '/order..v1.S/M', '/.order.S/M', '/1pkg.S/M', '/pkg.S/1M', '/pkg.S/Get-Order', '/pkg.S/M?x=1', 'order.v1.S/M',
    '/wp-login.php', '/pkg.S/M%20', `/${'a'.repeat(300)}.S/M`,
  ]) {
    assert.equal(rpcMethodFromPath(bad), undefined, bad);
  }
});

test('isRpcMethod checks a configured name', () => {
  assert.equal(isRpcMethod('order.v1.OrderService/GetOrder'), true);
  assert.equal(isRpcMethod('GET /v1/orders'), false);
});
