import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadRouteFile } from '../../src/route/route-file.ts';
import { restMethodLabel } from '../../src/route/route-template.ts';
import { tempFile } from './temp-files.ts';

const fixtures = join(import.meta.dirname, '../fixtures/routing');
const labels = (file: string) => loadRouteFile(file).map(restMethodLabel);

test('a text file: one route a line, comments and blank lines skipped', () => {
  assert.deepEqual(labels(join(fixtures, 'routes.txt')), [
    'GET /v1/orders/{orderId}',
    'GET /v1/orders/{orderId}/items/{itemId}',
    'POST /v1/orders',
    'GET /v1/orders/search',
    'GET /v1/reports/{name}.csv',
  ]);
});

test('a YAML list under routes:', () => {
  assert.deepEqual(labels(join(fixtures, 'routes.yaml')), ['GET /v1/customers/{id}', 'DELETE /v1/customers/{id}']);
  assert.deepEqual(labels(tempFile('bare.json', '["PUT /a/{b}"]')), ['PUT /a/{b}']);
});

test('OpenAPI 3: every operation, under the servers\' base path', () => {
  assert.deepEqual(labels(join(fixtures, 'openapi.yaml')), [
    'GET /shop/v1/orders',
    'POST /shop/v1/orders',
    'GET /shop/v1/orders/{orderId}',
    'DELETE /shop/v1/orders/{orderId}',
  ]);
  assert.deepEqual(labels(join(fixtures, 'openapi.json')), ['PUT /users/{userId}']);
});

test('errors name the file and what is wrong', () => {
  const txt = tempFile('bad.txt', 'GET /ok\n\nGETT /v1/orders\n');
  assert.throws(() => loadRouteFile(txt), { message: `${txt}:3: "GETT" is not an HTTP method (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE, PATCH)` });
  const list = tempFile('bad-list.yaml', 'routes:\n  - GET /a\n  - 42\n');
  assert.throws(() => loadRouteFile(list), { message: `${list}: routes[1] is not a string like "GET /v1/orders/{id}"` });
  const template = tempFile('bad-template.yaml', '- GET /v1/{id\n');
  assert.throws(() => loadRouteFile(template), { message: `${template}: routes[0]: template "/v1/{id": bad parameter in segment "{id"` });
  const shape = tempFile('shape.yaml', 'paths: []\n');
  assert.throws(() => loadRouteFile(shape), new RegExp(`^Error: ${shape}: expected a list of routes`));
  const yaml = tempFile('broken.yaml', 'routes: [GET /a\n');
  assert.throws(() => loadRouteFile(yaml), new RegExp(`^Error: ${yaml}: not valid YAML or JSON: `));
  const swagger = tempFile('swagger.json', '{"swagger": "2.0", "paths": {}}');
  assert.throws(() => loadRouteFile(swagger), { message: `${swagger}: Swagger 2.0 documents are not read; convert it to OpenAPI 3` });
  const v2 = tempFile('v2.yaml', 'openapi: 2.0\npaths: {}\n');
  assert.throws(() => loadRouteFile(v2), { message: `${v2}: openapi "2" is not supported; expected 3.x` });
  const noPaths = tempFile('nopaths.yaml', 'openapi: 3.0.0\n');
  assert.throws(() => loadRouteFile(noPaths), { message: `${noPaths}: "paths" is missing or not an object` });
  const badPath = tempFile('badpath.yaml', 'openapi: 3.0.0\npaths:\n  /a/{x:\n    get: {}\n');
  assert.throws(() => loadRouteFile(badPath), { message: `${badPath}: paths["/a/{x"].get: template "/a/{x": bad parameter in segment "{x"` });
  const noDefault = tempFile('nodefault.yaml', 'openapi: 3.0.0\nservers: [{url: "/{v}"}]\npaths: {}\n');
  assert.throws(() => loadRouteFile(noDefault), { message: `${noDefault}: servers[0] variable "v" has no default` });
  const missing = join(fixtures, 'missing.txt');
  assert.throws(() => loadRouteFile(missing), new RegExp(`^Error: ${missing}: cannot read it: ENOENT`));
});
