import assert from 'node:assert/strict';
import { test } from 'node:test';
import { httpRuleTemplate } from '../../src/route/http-rule.ts';

test('google.api.http templates become route templates', () => {
  assert.equal(httpRuleTemplate('/v1/orders/{id}'), '/v1/orders/{id}');
  assert.equal(httpRuleTemplate('/v1/orders'), '/v1/orders');
  assert.equal(httpRuleTemplate('/v1/{name=shelves/*}'), '/v1/shelves/{name}');
  assert.equal(httpRuleTemplate('/v1/{order.name=shops/*/orders/*}'), '/v1/shops/{order.name}/orders/{order.name}');
  assert.equal(httpRuleTemplate('/v1/{name=orders/*}:cancel'), '/v1/orders/{name}:cancel');
  assert.equal(httpRuleTemplate('/v1/orders:batchGet'), '/v1/orders:batchGet');
  assert.equal(httpRuleTemplate('/v1/{name=operations/**}'), '/v1/operations/{name=**}');
  assert.equal(httpRuleTemplate('/v1/{name=operations/**}:wait'), '/v1/operations/{name=**}:wait');
  assert.equal(httpRuleTemplate('/v1/*/items'), '/v1/{*}/items');
});

test('a bad path template is an error naming it', () => {
  assert.throws(() => httpRuleTemplate('v1/x'), /path "v1\/x" must start with "\/"/);
  assert.throws(() => httpRuleTemplate('/v1/{name=**}/x'), /path "\/v1\/\{name=\*\*\}\/x": .*must be the last segment/);
  assert.throws(() => httpRuleTemplate('/v1/{name}x'), /segment "\{name\}x" has text after its variable/);
  assert.throws(() => httpRuleTemplate('/v1/x:a:b'), /more than one verb/);
});
