import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RouteTable, parseRoute, parseTemplate } from '../../src/route/route-template.ts';

function table(...routes: string[]): RouteTable {
  const t = new RouteTable();
  for (const r of routes) t.add(parseRoute(r));
  return t;
}

test('parseRoute upper-cases the method and keeps the template', () => {
  assert.deepEqual(parseRoute('get /v1/orders/{id}'), { httpMethod: 'GET', template: '/v1/orders/{id}' });
  assert.deepEqual(parseRoute('  PATCH   /v1/x  '), { httpMethod: 'PATCH', template: '/v1/x' });
});

test('parseRoute and parseTemplate say what is wrong', () => {
  assert.throws(() => parseRoute('/v1/orders'), /is not "<METHOD> <path template>"/);
  assert.throws(() => parseRoute('FETCH /v1/orders'), /"FETCH" is not an HTTP method/);
  assert.throws(() => parseRoute('GET v1/orders'), /must start with "\/"/);
  assert.throws(() => parseTemplate('/v1/orders?x=1'), /must not contain whitespace, "\?" or "#"/);
  assert.throws(() => parseTemplate('/v1/{id'), /bad parameter in segment "\{id"/);
  assert.throws(() => parseTemplate('/v1/id}'), /unbalanced "}"/);
  assert.throws(() => parseTemplate('/v1/{}'), /bad parameter name ""/);
  assert.throws(() => parseTemplate('/v1/{a}{b}'), /adjacent parameters/);
  assert.throws(() => parseTemplate('/v1/{path=**}/x'), /must be the last segment/);
});

test('matching: literals, parameters, and the label of the route matched', () => {
  const t = table('GET /v1/orders/{id}', 'GET /v1/orders/search', 'POST /v1/orders', 'GET /v1/orders/{id}/items/{item}', 'GET /');
  assert.equal(t.match('GET', '/v1/orders/123'), 'GET /v1/orders/{id}');
  assert.equal(t.match('GET', '/v1/orders/search'), 'GET /v1/orders/search');
  assert.equal(t.match('POST', '/v1/orders'), 'POST /v1/orders');
  assert.equal(t.match('GET', '/v1/orders/1/items/2'), 'GET /v1/orders/{id}/items/{item}');
  assert.equal(t.match('GET', '/'), 'GET /');
  assert.equal(t.match('GET', '/v1/orders'), undefined);
  assert.equal(t.match('DELETE', '/v1/orders/123'), undefined);
  assert.equal(t.match('GET', '/v1/orders/'), undefined, 'a parameter is never empty');
  assert.equal(t.match('GET', '/v1/orders/1/items'), undefined);
  assert.equal(t.match('GET', '*'), undefined);
});

test('a literal that leads nowhere backtracks to the parameter', () => {
  const t = table('GET /v1/orders/search', 'GET /v1/orders/{id}/items');
  assert.equal(t.match('GET', '/v1/orders/search/items'), 'GET /v1/orders/{id}/items');
});

test('segments mixing literals and parameters, and the rest of the path', () => {
  const t = table('GET /v1/reports/{name}.csv', 'POST /v1/orders/{name}:cancel', 'GET /files/{path=**}', 'POST /ops/{name=**}:wait');
  assert.equal(t.match('GET', '/v1/reports/q3.csv'), 'GET /v1/reports/{name}.csv');
  assert.equal(t.match('GET', '/v1/reports/q3.json'), undefined);
  assert.equal(t.match('GET', '/v1/reports/.csv'), undefined);
  assert.equal(t.match('POST', '/v1/orders/o-1:cancel'), 'POST /v1/orders/{name}:cancel');
  assert.equal(t.match('GET', '/files/a/b/c.txt'), 'GET /files/{path=**}');
  assert.equal(t.match('GET', '/files/a'), 'GET /files/{path=**}');
  assert.equal(t.match('POST', '/ops/x/y:wait'), 'POST /ops/{name=**}:wait');
  assert.equal(t.match('POST', '/ops/x/y'), undefined);
});

test('the same route under other parameter names keeps the first label', () => {
  const t = table('GET /v1/orders/{orderId}', 'GET /v1/orders/{id}');
  assert.equal(t.size, 1);
  assert.equal(t.match('GET', '/v1/orders/9'), 'GET /v1/orders/{orderId}');
});

test('regex characters in literals are literal', () => {
  const t = table('GET /v1/{name}.(x)+');
  assert.equal(t.match('GET', '/v1/a.(x)+'), 'GET /v1/{name}.(x)+');
  assert.equal(t.match('GET', '/v1/a.xx'), undefined);
});
