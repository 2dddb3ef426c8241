// responseFields: what both relays read of an answer's header blocks (status,
// content-type, a gRPC status) straight off the decoded list. It must say what
// the header object would: the first value of each name, nothing when absent.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { headerText } from '../../src/protocol/header-text.ts';
import { headerBag, responseFields } from '../../src/relay/relay-stream.ts';

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
