import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MessageCounter, connectErrorCode, grpcStatusFromTrailerFrame } from '../../src/protocol/message-framing.ts';

function frame(flags: number, payload: Buffer | string): Buffer {
  const body = Buffer.from(payload);
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Feed `bytes` in chunks of every size from 1 up, to cover every split point. */
function feedSplit(counter: MessageCounter, bytes: Buffer, size: number): void {
  for (let i = 0; i < bytes.length; i += size) counter.push(bytes.subarray(i, i + size));
}

describe('MessageCounter', () => {
  const body = Buffer.concat([frame(0, 'hello'), frame(0, ''), frame(1, Buffer.alloc(70_000, 7)), frame(0, 'x')]);

  it('counts messages however the body is split into chunks', () => {
    for (const size of [1, 2, 3, 4, 5, 6, 7, 64, 70_000, body.length]) {
      const c = new MessageCounter(0, false);
      feedSplit(c, body, size);
      assert.equal(c.messages, 4, `chunk size ${size}`);
    }
  });

  it('calls back once, when the first message is complete', () => {
    let calls = 0;
    const c = new MessageCounter(0, false, () => calls++);
    c.push(body.subarray(0, 9));
    assert.equal(calls, 0);
    c.push(body.subarray(9));
    assert.equal(calls, 1);
  });

  it('reads the gRPC-Web trailer frame apart from messages', () => {
    const c = MessageCounter.forProtocol('grpc_web', false);
    feedSplit(c, Buffer.concat([frame(0, 'a'), frame(0x80, 'grpc-status:5\r\ngrpc-message:not%20found\r\n')]), 3);
    assert.equal(c.messages, 1);
    assert.equal(c.endFrameKind, 'grpc_web_trailers');
    assert.equal(grpcStatusFromTrailerFrame(c.endFrame!), 5);
  });

  it('decodes gRPC-Web text (base64), including padded runs back to back', () => {
    const c = MessageCounter.forProtocol('grpc_web', true);
    // Each frame base64-encoded on its own, as grpc-web servers flush per message.
    const text = frame(0, 'ab').toString('base64') + frame(0, 'xyz1').toString('base64') + frame(0x80, 'grpc-status: 0\r\n').toString('base64');
    feedSplit(c, Buffer.from(text, 'latin1'), 5);
    assert.equal(c.messages, 2);
    assert.equal(grpcStatusFromTrailerFrame(c.endFrame!), 0);
  });

  it('reads the Connect end-stream message and its error code', () => {
    const c = MessageCounter.forProtocol('connect', false);
    c.push(Buffer.concat([frame(0, '{}'), frame(2, '{"error":{"code":"not_found","message":"no"}}')]));
    assert.equal(c.messages, 1);
    assert.equal(connectErrorCode(c.endFrame!, true), 'not_found');
  });

  it('does not hold a status frame larger than it will read', () => {
    const c = MessageCounter.forProtocol('connect', false);
    c.push(frame(2, Buffer.alloc(100_000, 0x20)));
    assert.equal(c.endFrame, undefined);
    assert.equal(c.messages, 0);
  });
});

describe('connectErrorCode', () => {
  it('reads unary error bodies and end-stream messages', () => {
    assert.equal(connectErrorCode(Buffer.from('{"code":"unavailable","message":"x"}'), false), 'unavailable');
    assert.equal(connectErrorCode(Buffer.from('{"metadata":{}}'), true), undefined);
    assert.equal(connectErrorCode(Buffer.from('{"error":{}}'), true), 'unknown');
    assert.equal(connectErrorCode(Buffer.from('<html>'), false), null);
  });
});
