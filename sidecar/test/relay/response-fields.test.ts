// responseFields: what both relays read of an answer's header blocks (status,
// content-type, a gRPC status) straight off the decoded list. It must say what
// the header object would: the first value of each name, nothing when absent.
// requestFields: what the balanced relay's call reads of a request (method, path,
// detection, deadline, trace context), each as the header object has it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { headerText } from '../../src/protocol/header-text.ts';
import { detectRequest } from '../../src/protocol/detect.ts';
import { readDeadline } from '../../src/protocol/deadline-header.ts';
import { headerBag, REQUEST_FIELDS, requestFields, responseFields } from '../../src/relay/relay-stream.ts';

const READ = [':status', 'content-type', 'grpc-status'] as const;

describe('responseFields', () => {
  it('reads a gRPC answer and its trailers', () => {
    const head = responseFields([':status', '200', 'content-type', 'application/grpc', 'date', 'Sun, 06 Dec 2026 00:00:00 GMT']);
    assert.deepEqual({ ...head }, { ':status': '200', 'content-type': 'application/grpc', 'grpc-status': undefined });
    const trailers = responseFields(['grpc-status', '5', 'grpc-message', 'no such order']);
    assert.deepEqual({ ...trailers }, { ':status': undefined, 'content-type': undefined, 'grpc-status': '5' });
  });

  it('takes the first of a repeated field, as the header object does', () => {
    assert.equal(responseFields(['grpc-status', '0', 'grpc-status', '13'])['grpc-status'], '0');
  });

  it('agrees with the header object for any block', () => {
    const name = fc.constantFrom(...READ, 'grpc-message', 'date', '__proto__', 'constructor', 'x-a');
    const value = fc.string({ maxLength: 6 });
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 12 }), (fields) => {
        const list = fields.flat();
        const bag = headerBag(list);
        const read = responseFields(list);
        for (const n of READ) assert.equal(read[n], headerText(bag[n]), `${n} of ${JSON.stringify(list)}`);
      }),
      { numRuns: 500 },
    );
  });
});

describe('requestFields', () => {
  it('reads a gRPC request as the call sees it', () => {
    const list = [':method', 'POST', ':scheme', 'http', ':path', '/shop.v1.Orders/Get', ':authority', 'orders:50051', 'content-type', 'application/grpc+proto', 'te', 'trailers', 'grpc-timeout', '250m', 'user-agent', 'grpc-go/1.70'];
    const fields = requestFields(list);
    assert.equal(fields[':method'], 'POST');
    assert.equal(fields[':path'], '/shop.v1.Orders/Get');
    assert.equal(fields['user-agent'], undefined, 'a field no call reads is left out');
    const { detected } = detectRequest('POST', '/shop.v1.Orders/Get', fields, '/trpc');
    assert.equal(detected.protocol, 'grpc');
    assert.deepEqual(readDeadline(detected.protocol, fields), { header: 'grpc-timeout', raw: '250m', ms: 250 });
  });

  it('keeps the values of a repeated field in order, as the header object does', () => {
    assert.deepEqual(requestFields(['traceparent', 'a', 'traceparent', 'b', 'traceparent', 'c']).traceparent, ['a', 'b', 'c']);
  });

  it('agrees with the header object on every field a call reads, for any block', () => {
    const name = fc.constantFrom(...REQUEST_FIELDS, 'te', 'user-agent', '__proto__', 'constructor', 'x-a');
    const value = fc.string({ maxLength: 6 });
    fc.assert(
      fc.property(fc.array(fc.tuple(name, value), { maxLength: 14 }), (fields) => {
        const list = fields.flat();
        const bag = headerBag(list);
        const read = requestFields(list);
        for (const n of REQUEST_FIELDS) assert.deepEqual(read[n], bag[n], `${n} of ${JSON.stringify(list)}`);
      }),
      { numRuns: 500 },
    );
  });
});
