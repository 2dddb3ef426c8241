// Properties of the relay's frame parser: any cut of a connection's bytes gives the
// same frames as the bytes in one piece, and junk ends in a FrameError, never in
// any other exception.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { FrameError, FrameParser, type FrameSink } from '../../src/relay/frame-parser.ts';
import { CLIENT_PREFACE } from '../../src/h2/frame-types.ts';
import { readCorpus, splitAt } from '../support/corpus.ts';

/** What the sink was told, with each DATA frame's parts joined: cuts may split a frame's data anywhere. */
function parse(pieces: Buffer[], preface: boolean, maxHeaderBlock?: number): { events: string[]; error: string | undefined } {
  const events: string[] = [];
  let data: Buffer[] = [];
  const sink: FrameSink = {
    headers: (id, flags, block, promised) => events.push(`headers ${id} ${flags} ${block.toString('hex')} ${promised}`),
    data: (id, chunk, flags, last) => {
      data.push(Buffer.from(chunk));
      if (last) {
        events.push(`data ${id} ${flags} ${Buffer.concat(data).toString('hex')}`);
        data = [];
      }
    },
    rstStream: (id, code) => events.push(`rst ${id} ${code}`),
    settings: (flags, payload) => events.push(`settings ${flags} ${payload.toString('hex')}`),
    goaway: (last, code) => events.push(`goaway ${last} ${code}`),
    windowUpdate: (id, increment) => events.push(`window ${id} ${increment}`),
    ping: (flags, payload) => events.push(`ping ${flags} ${payload.toString('hex')}`),
    other: (type, flags, id, length) => events.push(`other ${type} ${flags} ${id} ${length}`),
  };
  const parser = new FrameParser(sink, preface, maxHeaderBlock);
  try {
    for (const p of pieces) parser.push(p);
  } catch (err) {
    if (!(err instanceof FrameError)) throw err;
    return { events, error: `${err.h2Code} ${err.message}` };
  }
  return { events, error: undefined };
}

function frame(type: number, flags: number, id: number, payload: Uint8Array): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
}

/** `v` moved into the range RFC 9113 §6.5.2 allows setting `k`: ENABLE_PUSH 0 or 1, MAX_FRAME_SIZE 2^14 to 2^24-1 (fc.nat() stays within INITIAL_WINDOW_SIZE's 2^31-1). */
function validSetting(k: number, v: number): number {
  if (k === 2) return v % 2;
  if (k === 5) return 16_384 + (v % (0xffffff - 16_384 + 1));
  return v;
}

const streamId = fc.integer({ min: 1, max: 9 });
const bytes = (max: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ maxLength: max });
/** Well-formed frames of every kind the parser tells apart, padded DATA and split header blocks among them. */
const validFrame: fc.Arbitrary<Buffer> = fc.oneof(
  fc.tuple(streamId, bytes(40), fc.boolean()).map(([id, p, end]) => frame(0, end ? 1 : 0, id, p)),
  fc.tuple(streamId, bytes(40), fc.integer({ min: 0, max: 20 })).map(([id, p, pad]) => frame(0, 0x8, id, Buffer.concat([Buffer.from([pad]), p, Buffer.alloc(pad)]))),
  fc.tuple(streamId, bytes(40), fc.array(bytes(20), { maxLength: 3 })).map(([id, first, rest]) =>
    Buffer.concat([frame(1, rest.length === 0 ? 4 : 0, id, first), ...rest.map((c, i) => frame(9, i === rest.length - 1 ? 4 : 0, id, c))]),
  ),
  fc.tuple(streamId, fc.nat()).map(([id, code]) => frame(3, 0, id, Buffer.from([code >>> 24, (code >>> 16) & 255, (code >>> 8) & 255, code & 255]))),
  fc.array(fc.tuple(fc.integer({ min: 1, max: 6 }), fc.nat()), { maxLength: 5 }).map((s) => frame(4, 0, 0, Buffer.concat(s.map(([k, v]) => { const b = Buffer.alloc(6); b.writeUInt16BE(k); b.writeUInt32BE(validSetting(k, v), 2); return b; })))),
  fc.constant(frame(4, 1, 0, Buffer.alloc(0))),
  fc.tuple(fc.nat(), bytes(8)).map(([n, p]) => frame(6, 0, 0, Buffer.concat([Buffer.alloc(4), Buffer.from([n & 255, 0, 0, 0]), p]).subarray(0, 8))),
  fc.tuple(fc.nat(), fc.nat(), bytes(10)).map(([last, code, debug]) => { const b = Buffer.alloc(8); b.writeUInt32BE(last & 0x7fffffff); b.writeUInt32BE(code, 4); return frame(7, 0, 0, Buffer.concat([b, debug])); }),
  fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 1, max: 0x7fffffff })).map(([id, inc]) => { const b = Buffer.alloc(4); b.writeUInt32BE(inc); return frame(8, 0, id, b); }),
  fc.tuple(fc.integer({ min: 10, max: 255 }), fc.nat(255), fc.nat(9), bytes(20)).map(([type, flags, id, p]) => frame(type, flags, id, p)),
);

describe('FrameParser properties', () => {
  it('tells the same frames for any cut of a well-formed connection', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(validFrame, { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 }), (preface, frames, cuts) => {
        const bytes = Buffer.concat([preface ? CLIENT_PREFACE : Buffer.alloc(0), ...frames]);
        const whole = parse([bytes], preface);
        assert.equal(whole.error, undefined);
        assert.deepEqual(parse(splitAt(bytes, cuts), preface), whole);
        assert.deepEqual(parse([...bytes].map((b) => Buffer.from([b])), preface), whole, 'one byte at a time');
      }),
    );
  });

  it('ends junk, cut anywhere, with the same frames and the same FrameError, never another exception', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(fc.oneof(validFrame, bytes(30).map((b) => Buffer.from(b))), { maxLength: 10 }), fc.array(fc.nat(), { maxLength: 20 }), (preface, parts, cuts) => {
        const bytes = Buffer.concat([preface ? CLIENT_PREFACE : Buffer.alloc(0), ...parts]);
        // A small cap on header blocks, so that some junk trips it.
        assert.deepEqual(parse(splitAt(bytes, cuts), preface, 64), parse([bytes], preface, 64));
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ hex: string; preface: boolean; error: string | null }>('frame-parser')) {
      const bytes = Buffer.from(input.hex, 'hex');
      const whole = parse([bytes], input.preface);
      assert.equal(whole.error ?? null, input.error, why);
      for (let cut = 0; cut <= bytes.length; cut++) assert.deepEqual(parse(splitAt(bytes, [cut]), input.preface), whole, `${why}, cut at ${cut}`);
    }
  });
});
