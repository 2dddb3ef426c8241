// The checks a start makes on google.api.http rules before transcoding them:
// each mistake is one line naming the .proto file, the rule and the field.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/load.ts';
import { loadStartFiles } from '../../src/config/start-files.ts';
import { checkReport } from '../../src/check.ts';
import { loadTranscodeTable } from '../../src/route/transcode-table.ts';
import { tempFile } from '../route/temp-files.ts';
import { SHOP_PROTO_DIR } from './shop-server.ts';

function service(dir: string, rpcs: string, messages = 'message R { string order_id = 1; Inner inner = 2; repeated string tags = 3; }\nmessage Inner { string name = 1; }\n'): string {
  const file = tempFile(`${dir}/p.proto`, `syntax = "proto3"; package p;\nservice S {\n${rpcs}\n}\n${messages}`);
  return file;
}

function rpc(name: string, rule: string): string {
  return ` rpc ${name}(R) returns (R) { option (google.api.http) = { ${rule} }; }`;
}

test('a template variable naming no field stops the start, naming the file, the rule and the field', () => {
  const file = service('t-var', rpc('Get', 'get: "/v1/orders/{orderId}"'));
  assert.throws(() => loadTranscodeTable(join(file, '..'), 'json'), { message: `${file}: p.S/Get (google.api.http get "/v1/orders/{orderId}"): template variable "orderId" names no field of p.R` });
});

test('a nested variable is checked step by step, and must not be repeated or a message', () => {
  const nested = service('t-nested', rpc('Get', 'get: "/v1/{inner.nme}"'));
  assert.throws(() => loadTranscodeTable(join(nested, '..'), 'json'), { message: `${nested}: p.S/Get (google.api.http get "/v1/{inner.nme}"): template variable "inner.nme" names no field of p.Inner (in "inner")` });
  const repeated = service('t-rep', rpc('Get', 'get: "/v1/{tags}"'));
  assert.throws(() => loadTranscodeTable(join(repeated, '..'), 'json'), /template variable "tags" is a repeated field$/u);
  const message = service('t-msg', rpc('Get', 'get: "/v1/{inner}"'));
  assert.throws(() => loadTranscodeTable(join(message, '..'), 'json'), /template variable "inner" is a message field/u);
});

test('a body or response_body field that does not exist stops the start', () => {
  const body = service('t-body', rpc('Create', 'post: "/v1/orders" body: "order"'));
  assert.throws(() => loadTranscodeTable(join(body, '..'), 'json'), { message: `${body}: p.S/Create (google.api.http post "/v1/orders"): body "order" names no field of p.R` });
  const response = service('t-resp', rpc('Get', 'get: "/v1/orders" response_body: "items"'));
  assert.throws(() => loadTranscodeTable(join(response, '..'), 'json'), { message: `${response}: p.S/Get (google.api.http get "/v1/orders"): response_body "items" names no field of p.R` });
});

test('two rules that claim one route stop the start, whatever their variables are called', () => {
  const file = service('t-twice', `${rpc('A', 'get: "/v1/orders/{order_id}"')}\n${rpc('B', 'get: "/v1/orders/{inner.name}"')}`);
  assert.throws(() => loadTranscodeTable(join(file, '..'), 'json'), {
    message: `${file}: p.S/B (google.api.http get "/v1/orders/{inner.name}"): the route GET /v1/orders/* is already claimed by p.S/A ("/v1/orders/{order_id}" in ${file})`,
  });
});

test('--check names the mistake as a start would, and counts the routes when there is none', () => {
  const file = service('t-check', rpc('Get', 'get: "/v1/orders/{orderId}"'));
  const bad = loadConfig(['--upstream', 'http://127.0.0.1:1', '--proto', join(file, '..'), '--transcode', '--check'], {});
  assert.equal(bad.kind, 'check');
  assert.throws(() => loadStartFiles(bad.kind === 'check' ? bad.config : (undefined as never)), { name: 'ConfigError', message: `--proto: ${file}: p.S/Get (google.api.http get "/v1/orders/{orderId}"): template variable "orderId" names no field of p.R` });
  const good = loadConfig(['--upstream', 'http://127.0.0.1:1', '--proto', SHOP_PROTO_DIR, '--transcode', '--check'], {});
  assert.equal(good.kind, 'check');
  if (good.kind !== 'check') return;
  assert.match(checkReport(good.config, good.settings, loadStartFiles(good.config)), /^ {2}transcoded routes: 7 \(google\.api\.http bindings/mu);
});

test('--transcode needs --proto', () => {
  assert.throws(() => loadConfig(['--upstream', 'http://127.0.0.1:1', '--transcode'], {}), { name: 'ConfigError', message: /^--transcode: needs --proto/u });
});

test('a literal route is tried before a variable one', () => {
  const file = service('t-order', `${rpc('Get', 'get: "/v1/{order_id}"')}\n${rpc('List', 'get: "/v1/orders"')}`);
  const table = loadTranscodeTable(join(file, '..'), 'json');
  assert.equal(table.match('GET', '/v1/orders')?.binding.rpc, 'p.S/List');
  assert.equal(table.match('GET', '/v1/o-1')?.binding.rpc, 'p.S/Get');
  assert.equal(table.match('GET', '/v1/a/b'), undefined);
  assert.equal(table.match('POST', '/v1/orders'), undefined);
});
