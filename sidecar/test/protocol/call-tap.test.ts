// A call's tap (protocol/call-tap.ts) reading a response body as it passes: the
// time of the first whole response message is taken once, when the chunk that
// completes it passes, however the messages are cut.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallTap } from '../../src/protocol/call-tap.ts';
import type { TappedFacts } from '../../src/protocol/vocabulary.ts';

const facts = (): TappedFacts => ({
  protocol: 'grpc',
  framed: true,
  trpc: undefined,
  httpStatus: 0,
  requestBytes: 0,
  responseBytes: 0,
  requestMessages: 0,
  responseMessages: 0,
  firstResponseMessageTime: undefined,
  grpcStatus: undefined,
  connectCode: undefined,
  connectEndStream: false,
});

/** A gRPC message: its 5-octet envelope and `n` octets. */
const message = (n: number): Buffer => Buffer.concat([Buffer.from([0, 0, 0, 0, n]), Buffer.alloc(n, 1)]);

describe('call tap', () => {
  it('takes the first response message time when the chunk completing it passes, and never again', () => {
    let clock = 100;
    const call = facts();
    const tap = new CallTap(call, false, () => clock);
    const body = Buffer.concat([message(10), message(3), message(0)]);
    // The first envelope cut inside its header, then inside its payload.
    const cuts = [2, 9, 15, body.length];
    let from = 0;
    const seen: (number | undefined)[] = [];
    for (const to of cuts) {
      clock += 10;
      tap.responseData(body.subarray(from, to));
      seen.push(call.firstResponseMessageTime);
      from = to;
    }
    // 2 and 9 octets in: the first message (15 octets) is not whole; 15 in, it is, at 130; later chunks leave it.
    assert.deepEqual(seen, [undefined, undefined, 130, 130]);
    assert.equal(call.responseMessages, 3);
    assert.equal(call.responseBytes, body.length);
  });

  it('takes it at the chunk that carries several whole messages at once', () => {
    const call = facts();
    const tap = new CallTap(call, false, () => 42);
    tap.responseData(Buffer.concat([message(1), message(2)]));
    assert.equal(call.firstResponseMessageTime, 42);
    assert.equal(call.responseMessages, 2);
  });
});
