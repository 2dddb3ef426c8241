import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { detect } from '../../src/protocol/detect.ts';

// Request heads as the common clients send them (grpc-js, grpc-go, connect-es,
// grpc-web, browsers, curl), and edge cases that must not be mistaken for RPC.
const CORPUS: [string, { method: string; ct?: string; cv?: string; query?: string }, string, string, boolean][] = [
  ['grpc-js unary', { method: 'POST', ct: 'application/grpc' }, 'grpc', 'proto', true],
  ['grpc-go explicit codec', { method: 'POST', ct: 'application/grpc+proto' }, 'grpc', 'proto', true],
  ['grpc with json codec', { method: 'POST', ct: 'application/grpc+json' }, 'grpc', 'json', true],
  ['grpc with a custom codec', { method: 'POST', ct: 'application/grpc+flatbuffers' }, 'grpc', 'other', true],
  ['grpc content-type in capitals', { method: 'POST', ct: 'Application/GRPC' }, 'grpc', 'proto', true],
  ['grpc-web binary', { method: 'POST', ct: 'application/grpc-web+proto' }, 'grpc_web', 'proto', true],
  ['grpc-web bare', { method: 'POST', ct: 'application/grpc-web' }, 'grpc_web', 'proto', true],
  ['grpc-web json', { method: 'POST', ct: 'application/grpc-web+json' }, 'grpc_web', 'json', true],
  ['grpc-web text', { method: 'POST', ct: 'application/grpc-web-text' }, 'grpc_web', 'text', true],
  ['grpc-web text with codec', { method: 'POST', ct: 'application/grpc-web-text+proto' }, 'grpc_web', 'text', true],
  ['connect streaming proto', { method: 'POST', ct: 'application/connect+proto' }, 'connect', 'proto', true],
  ['connect streaming json', { method: 'POST', ct: 'application/connect+json' }, 'connect', 'json', true],
  ['connect unary json', { method: 'POST', ct: 'application/json', cv: '1' }, 'connect', 'json', false],
  ['connect unary proto', { method: 'POST', ct: 'application/proto', cv: '1' }, 'connect', 'proto', false],
  ['connect unary json with charset', { method: 'POST', ct: 'application/json; charset=utf-8', cv: '1' }, 'connect', 'json', false],
  ['connect GET', { method: 'GET', query: 'connect=v1&encoding=json&message=%7B%7D' }, 'connect', 'json', false],
  ['connect GET proto', { method: 'GET', query: 'encoding=proto&message=AA&base64=1&connect=v1' }, 'connect', 'proto', false],
  ['REST JSON POST', { method: 'POST', ct: 'application/json' }, 'rest', 'json', false],
  ['REST problem+json', { method: 'POST', ct: 'application/problem+json' }, 'rest', 'json', false],
  ['REST GET', { method: 'GET' }, 'rest', 'other', false],
  ['REST GET with a connect-like query', { method: 'GET', query: 'connect=v2' }, 'rest', 'other', false],
  ['REST form', { method: 'POST', ct: 'application/x-www-form-urlencoded' }, 'rest', 'other', false],
  ['REST protobuf body', { method: 'POST', ct: 'application/x-protobuf' }, 'rest', 'proto', false],
  ['not grpc: grpcfoo', { method: 'POST', ct: 'application/grpcfoo' }, 'rest', 'other', false],
  ['not connect: connectors', { method: 'POST', ct: 'application/connectors' }, 'rest', 'other', false],
  ['server-sent events', { method: 'GET', ct: 'text/event-stream' }, 'rest', 'other', false],
];

describe('detect', () => {
  for (const [name, head, protocol, encoding, framed] of CORPUS) {
    it(name, () => {
      const d = detect(head.method, head.ct, head.cv, head.query ?? '');
      assert.deepEqual([d.protocol, d.encoding, d.framed], [protocol, encoding, framed]);
    });
  }

  it('marks only grpc-web-text as base64', () => {
    assert.equal(detect('POST', 'application/grpc-web-text', undefined, '').base64, true);
    assert.equal(detect('POST', 'application/grpc-web+proto', undefined, '').base64, false);
  });
});

describe('tRPC', () => {
  it('reads the procedures off a path under the prefix, and a batch off `batch=1`', () => {
    const one = detect('GET', undefined, undefined, 'input=%7B%7D', '/trpc/order.get', '/trpc');
    assert.equal(one.protocol, 'trpc');
    assert.deepEqual(one.trpc?.procedures.map((p) => p.path), ['order.get']);
    assert.equal(one.trpc?.batch, false);
    const batch = detect('POST', 'application/json', undefined, 'batch=1', '/api/trpc/order.get,order.list', '/api/trpc');
    assert.deepEqual(batch.trpc?.procedures.map((p) => p.path), ['order.get', 'order.list']);
    assert.equal(batch.trpc?.batch, true);
  });

  it('leaves gRPC, Connect, other paths and an empty prefix alone', () => {
    assert.equal(detect('POST', 'application/grpc', undefined, '', '/trpc/x', '/trpc').protocol, 'grpc');
    assert.equal(detect('POST', 'application/json', '1', '', '/trpc/x', '/trpc').protocol, 'connect');
    assert.equal(detect('GET', undefined, undefined, '', '/trpcx/order.get', '/trpc').protocol, 'rest');
    assert.equal(detect('GET', undefined, undefined, '', '/trpc/', '/trpc').protocol, 'rest');
    assert.equal(detect('GET', undefined, undefined, '', '/trpc/order.get', '').protocol, 'rest');
  });
});
