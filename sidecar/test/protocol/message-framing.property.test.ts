// Properties of the length-prefixed message counter: however the body is cut into
// chunks, and for gRPC-Web text however its base64 is cut, the counts and the status
// frame come out as for the body in one piece, and as the frames written say.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MessageCounter } from '../../src/protocol/message-framing.ts';
import { readCorpus, splitAt } from '../support/corpus.ts';

interface Written {
  flags: number;
  payload: Uint8Array;
}

function envelope(frames: Written[]): Buffer {
  return Buffer.concat(frames.map((f) => {
    const head = Buffer.alloc(5);
    head[0] = f.flags;
    head.writeUInt32BE(f.payload.length, 1);
    return Buffer.concat([head, f.payload]);
  }));
}

function count(protocol: string, base64: boolean, pieces: Buffer[]): { messages: number; endFrame: string | undefined; kind: string | undefined; atBoundary: boolean } {
  const counter = MessageCounter.forProtocol(protocol, base64);
  for (const p of pieces) counter.push(p);
  return { messages: counter.messages, endFrame: counter.endFrame?.toString('hex'), kind: counter.endFrameKind, atBoundary: counter.atBoundary };
}

const END_FLAG: Record<string, number> = { grpc: 0, grpc_web: 0x80, connect: 0x02 };
const protocols = fc.constantFrom('grpc', 'grpc_web', 'connect');
const frames = (protocol: string): fc.Arbitrary<Written[]> =>
  fc.array(fc.record({ end: fc.boolean(), payload: fc.uint8Array({ maxLength: 64 }) }), { maxLength: 8 }).map((list) => {
    // A status frame, if any, is the last one.
    const lastEnd = END_FLAG[protocol]! !== 0 && list.length > 0 && list[list.length - 1]!.end;
    return list.map((f, i) => ({ flags: lastEnd && i === list.length - 1 ? END_FLAG[protocol]! : 0, payload: f.payload }));
  });

describe('MessageCounter properties', () => {
  it('counts the same messages and status frame for any cut of the body, as written', () => {
    fc.assert(
      fc.property(protocols.chain((p) => fc.tuple(fc.constant(p), frames(p), fc.array(fc.nat(), { maxLength: 12 }))), ([protocol, written, cuts]) => {
        const body = envelope(written);
        const whole = count(protocol, false, [body]);
        assert.deepEqual(count(protocol, false, splitAt(body, cuts)), whole);
        const endFrames = written.filter((f) => f.flags !== 0);
        assert.equal(whole.messages, written.length - endFrames.length);
        assert.equal(whole.endFrame, endFrames[0] ? Buffer.from(endFrames[0].payload).toString('hex') : undefined);
        assert.ok(whole.atBoundary);
      }),
    );
  });

  it('reads gRPC-Web text the same for any cut of its base64, in one run or one padded run per frame', () => {
    fc.assert(
      fc.property(frames('grpc_web'), fc.boolean(), fc.array(fc.nat(), { maxLength: 12 }), (written, perFrame, cuts) => {
        const text = perFrame ? written.map((f) => envelope([f]).toString('base64')).join('') : envelope(written).toString('base64');
        const binary = count('grpc_web', false, [envelope(written)]);
        assert.deepEqual(count('grpc_web', true, splitAt(Buffer.from(text, 'latin1'), cuts)), binary);
      }),
    );
  });

  it('never throws on arbitrary bytes, cut anywhere', () => {
    fc.assert(
      fc.property(protocols, fc.boolean(), fc.uint8Array({ maxLength: 300 }), fc.array(fc.nat(), { maxLength: 12 }), (protocol, base64, junk, cuts) => {
        count(protocol, base64, splitAt(Buffer.from(junk), cuts));
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ protocol: string; base64: boolean; hex: string; messages: number }>('message-framing')) {
      const body = Buffer.from(input.hex, 'hex');
      for (let cut = 0; cut <= body.length; cut++) assert.equal(count(input.protocol, input.base64, splitAt(body, [cut])).messages, input.messages, why);
    }
  });
});
