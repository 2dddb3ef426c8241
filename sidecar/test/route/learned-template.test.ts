import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isIdSegment, learnTemplate } from '../../src/route/learned-template.ts';

test('identifiers become {id}', () => {
  for (const id of [
    '123', '0', '2024', '550e8400-e29b-41d4-a716-446655440000', 'DEADBEEF-E29B-41D4-A716-446655440000',
    'deadbeefdeadbeef', '5f2b8c1e9a7d4e3f', 'user12345', 'INV-000123', 'a1b2c3d4e5f6g7h8', 'AbCdEfGhIjKlMnOp1',
    'dGhpcyBpcyBhIHRva2Vu==', 'a+b/c', 'john@example.com', '%E2%9C%93', '2fa', 'x'.repeat(41),
  ]) {
    assert.equal(isIdSegment(id), true, id);
  }
});

test('words stay', () => {
  for (const word of ['v1', 'v2beta1', 'orders', 'search', 'oauth2', 's3', 'x509', 'order-items', 'me', 'index.html', '_health', 'longwordsegmentwithoutdigits', 'x'.repeat(40)]) {
    assert.equal(isIdSegment(word), false, word);
  }
});

test('learned templates keep the structure of the path', () => {
  assert.equal(learnTemplate('/v1/orders/8812'), '/v1/orders/{id}');
  assert.equal(learnTemplate('/v1/orders/8812/items/550e8400-e29b-41d4-a716-446655440000'), '/v1/orders/{id}/items/{id}');
  assert.equal(learnTemplate('/v1/orders/'), '/v1/orders/');
  assert.equal(learnTemplate('/'), '/');
  assert.equal(learnTemplate('//x'), '//x');
});

test('no template from something that is not a path, or too long to be a route', () => {
  assert.equal(learnTemplate('*'), undefined);
  assert.equal(learnTemplate('http://example.com/x'), undefined);
  assert.equal(learnTemplate('/a'.repeat(200)), undefined);
});
