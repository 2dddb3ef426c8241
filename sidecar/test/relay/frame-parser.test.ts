// The frame reader: every frame type of RFC 9113 (and an unknown one), padding,
// PRIORITY, CONTINUATION; the same events however the bytes are split (at
// every byte, and at random); malformed streams end in FrameError, never
// another exception.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FrameError, FrameParser, type FrameSink } from '../../src/relay/frame-parser.ts';
import { CLIENT_PREFACE, Flag, FrameType } from '../../src/h2/frame-types.ts';
import { encodeLiteralBlock } from '../../src/relay/frame-writer.ts';
import { frame, goawayFrame, rstStreamFrame } from '../../src/h2/frames.ts';

type Event = (string | number)[];

/** Records what the parser reports, DATA parts joined per frame so that splits compare equal. */
function recorder(): { sink: FrameSink; events: Event[] } {
  const events: Event[] = [];
  let data: Buffer[] = [];
  const sink: FrameSink = {
    headers: (id, flags, block, promised) => void events.push(['headers', id, flags, block.toString('hex'), promised]),
    data: (id, chunk, flags, last) => {
      data.push(Buffer.from(chunk));
      if (!last) return;
      events.push(['data', id, flags, Buffer.concat(data).toString('hex')]);
      data = [];
    },
    rstStream: (id, code) => void events.push(['rst', id, code]),
    settings: (flags, payload) => void events.push(['settings', flags, payload.toString('hex')]),
    goaway: (last, code) => void events.push(['goaway', last, code]),
    windowUpdate: (id, increment) => void events.push(['window', id, increment]),
    ping: (flags, payload) => void events.push(['ping', flags, payload.toString('hex')]),
    other: (type, flags, id, length) => void events.push(['other', type, flags, id, length]),
  };
  return { sink, events };
}

function padded(body: Buffer, pad: number, lead: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([Buffer.from([pad]), lead, body, Buffer.alloc(pad)]);
}

const block = encodeLiteralBlock([[':method', 'POST'], [':path', '/echo.v1.EchoService/Echo'], ['content-type', 'application/grpc'], ['grpc-timeout', '5S']]);
const settingsPayload = Buffer.from('000100001000000300000064000400400000', 'hex');
const priority = Buffer.from([0x80, 0, 0, 1, 15]);

/** A stream with every frame type, both DATA paddings, PRIORITY on HEADERS, and a block split over CONTINUATIONs. */
const CORPUS: Buffer = Buffer.concat([
  CLIENT_PREFACE,
  frame(FrameType.SETTINGS, 0, 0, settingsPayload),
  frame(FrameType.SETTINGS, Flag.ACK, 0),
  frame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.from([0, 0x0f, 0, 1])),
  frame(FrameType.HEADERS, Flag.END_HEADERS, 1, block),
  frame(FrameType.DATA, 0, 1, Buffer.from('0000000003616263', 'hex')),
  frame(FrameType.DATA, Flag.PADDED | Flag.END_STREAM, 1, padded(Buffer.from('xyz'), 7)),
  frame(FrameType.HEADERS, Flag.PRIORITY | Flag.PADDED, 3, padded(block.subarray(0, 10), 3, priority)),
  frame(FrameType.CONTINUATION, 0, 3, block.subarray(10, 20)),
  frame(FrameType.CONTINUATION, Flag.END_HEADERS, 3, block.subarray(20)),
  frame(FrameType.PRIORITY, 0, 3, priority),
  frame(FrameType.DATA, Flag.PADDED, 3, padded(Buffer.alloc(0), 0)),
  frame(FrameType.DATA, Flag.PADDED, 3, padded(Buffer.alloc(0), 4)),
  frame(FrameType.DATA, Flag.END_STREAM, 3),
  frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS | Flag.PADDED, 1, padded(block, 2, Buffer.from([0, 0, 0, 2]))),
  frame(FrameType.PING, 0, 0, Buffer.alloc(8, 1)),
  frame(FrameType.PING, Flag.ACK, 0, Buffer.alloc(8, 1)),
  rstStreamFrame(3, 8),
  frame(0xfa, 0x3, 5, Buffer.from('an extension frame')),
  frame(0xfb, 0, 0),
  goawayFrame(3, 0),
  frame(FrameType.GOAWAY, 0, 0, Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 11]), Buffer.from('debug data')])),
]);

const EXPECTED: Event[] = [
  ['settings', 0, settingsPayload.toString('hex')],
  ['settings', 1, ''],
  ['window', 0, 0x0f0001],
  ['headers', 1, Flag.END_HEADERS, block.toString('hex'), 0],
  ['data', 1, 0, '0000000003616263'],
  ['data', 1, Flag.PADDED | Flag.END_STREAM, Buffer.from('xyz').toString('hex')],
  ['headers', 3, Flag.PRIORITY | Flag.PADDED, block.toString('hex'), 0],
  ['other', FrameType.PRIORITY, 0, 3, 5],
  ['data', 3, Flag.PADDED, ''],
  ['data', 3, Flag.PADDED, ''],
  ['data', 3, Flag.END_STREAM, ''],
  ['headers', 1, Flag.END_HEADERS | Flag.PADDED, block.toString('hex'), 2],
  ['ping', 0, '0101010101010101'],
  ['ping', Flag.ACK, '0101010101010101'],
  ['rst', 3, 8],
  ['other', 0xfa, 3, 5, 18],
  ['other', 0xfb, 0, 0, 0],
  ['goaway', 3, 0],
  ['goaway', 1, 11],
];

function parseInPieces(bytes: Buffer, cuts: number[]): { events: Event[]; boundaries: number } {
  const { sink, events } = recorder();
  const p = new FrameParser(sink, true);
  let at = 0;
  let boundaries = 0;
  for (const cut of [...cuts, bytes.length]) {
    p.push(bytes.subarray(at, cut));
    at = cut;
    if (p.atBoundary) boundaries++;
  }
  return { events, boundaries };
}

describe('frame parser', () => {
  it('reads every frame type, padding, PRIORITY and CONTINUATION', () => {
    assert.deepEqual(parseInPieces(CORPUS, []).events, EXPECTED);
  });

  it('reads the same events with the stream split at every byte', () => {
    const cuts = Array.from({ length: CORPUS.length - 1 }, (_, i) => i + 1);
    assert.deepEqual(parseInPieces(CORPUS, cuts).events, EXPECTED);
  });

  it('reads the same events for 2,000 random splits', () => {
    let seed = 11;
    const rand = (n: number): number => (((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n);
    for (let round = 0; round < 2000; round++) {
      const cuts = new Set<number>();
      const count = rand(30);
      for (let k = 0; k < count; k++) cuts.add(1 + rand(CORPUS.length - 1));
      const sorted = [...cuts].sort((a, b) => a - b);
      assert.deepEqual(parseInPieces(CORPUS, sorted).events, EXPECTED, `cuts ${sorted.join(',')}`);
    }
  });

  it('is at a frame boundary only between frames and outside a header block', () => {
    const { sink } = recorder();
    const p = new FrameParser(sink, false);
    const headers = frame(FrameType.HEADERS, 0, 1, block.subarray(0, 5));
    p.push(headers.subarray(0, 4));
    assert.equal(p.atBoundary, false);
    p.push(headers.subarray(4));
    assert.equal(p.atBoundary, false, 'inside a header block');
    p.push(frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(5)));
    assert.equal(p.atBoundary, true);
  });

  const malformed: [string, Buffer, boolean][] = [
    ['a wrong preface', Buffer.from('GET / HTTP/1.1\r\n\r\n'), true],
    ['DATA on stream 0', frame(FrameType.DATA, 0, 0, Buffer.from('x')), false],
    ['padding longer than a DATA payload', frame(FrameType.DATA, Flag.PADDED, 1, Buffer.from([9, 1, 2])), false],
    ['padding longer than a HEADERS payload', frame(FrameType.HEADERS, Flag.PADDED | Flag.END_HEADERS, 1, Buffer.from([9, 0x82])), false],
    ['a frame between HEADERS and its CONTINUATION', Buffer.concat([frame(FrameType.HEADERS, 0, 1, Buffer.from([0x82])), frame(FrameType.PING, 0, 0, Buffer.alloc(8))]), false],
    ['a CONTINUATION on another stream', Buffer.concat([frame(FrameType.HEADERS, 0, 1, Buffer.from([0x82])), frame(FrameType.CONTINUATION, Flag.END_HEADERS, 3, Buffer.from([0x84]))]), false],
    ['a CONTINUATION without HEADERS', frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, Buffer.from([0x82])), false],
    ['RST_STREAM of 3 bytes', frame(FrameType.RST_STREAM, 0, 1, Buffer.alloc(3)), false],
    ['SETTINGS of 5 bytes', frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(5)), false],
    ['SETTINGS on a stream', frame(FrameType.SETTINGS, 0, 1), false],
    ['a GOAWAY of 4 bytes', frame(FrameType.GOAWAY, 0, 0, Buffer.alloc(4)), false],
  ];
  for (const [label, bytes, preface] of malformed) {
    it(`throws FrameError on ${label}`, () => {
      const p = new FrameParser(recorder().sink, preface);
      assert.throws(() => p.push(bytes), FrameError);
      // Once failed it reads nothing more and throws nothing more.
      p.push(frame(FrameType.PING, 0, 0, Buffer.alloc(8)));
    });
  }

  it('reads a GOAWAY’s first 8 octets and skips its debug data unkept, in any pieces', () => {
    const debug = Buffer.alloc(1024 * 1024, 0x64);
    const payload = Buffer.concat([goawayFrame(5, 0x2).subarray(9), debug]);
    const bytes = Buffer.concat([frame(FrameType.GOAWAY, 0, 0, payload), frame(FrameType.PING, 0, 0, Buffer.alloc(8, 1))]);
    for (const size of [bytes.length, 64 * 1024, 7]) {
      const seen: number[] = [];
      const { sink, events } = recorder();
      const p = new FrameParser({ ...sink, goaway: (last, code, payload) => (seen.push(payload.length), sink.goaway(last, code, payload)) }, false);
      for (let at = 0; at < bytes.length; at += size) p.push(bytes.subarray(at, at + size));
      assert.deepEqual(events, [['goaway', 5, 0x2], ['ping', 0, '0101010101010101']], `pieces of ${size}`);
      assert.deepEqual(seen, [8], 'the sink is shown the 8 octets that matter, never the debug data');
    }
  });

  it('holds frames to the receiver’s SETTINGS_MAX_FRAME_SIZE (FRAME_SIZE_ERROR), and SETTINGS to the values RFC 9113 allows', () => {
    const p = new FrameParser(recorder().sink, false);
    p.maxFrameSize = 16_384;
    p.push(frame(FrameType.DATA, 0, 1, Buffer.alloc(16_384)));
    assert.throws(() => p.push(frame(FrameType.DATA, 0, 1, Buffer.alloc(16_385))), (err: FrameError) => err.h2Code === 0x6);
    const setting = (id: number, value: number): Buffer => {
      const b = Buffer.alloc(6);
      b.writeUInt16BE(id, 0);
      b.writeUInt32BE(value, 2);
      return frame(FrameType.SETTINGS, 0, 0, b);
    };
    for (const [id, value, code] of [[0x2, 2, 0x1], [0x4, 2 ** 31, 0x3], [0x5, 16_383, 0x1], [0x5, 2 ** 24, 0x1]] as const) {
      assert.throws(() => new FrameParser(recorder().sink, false).push(setting(id, value)), (err: FrameError) => err.h2Code === code, `setting ${id} = ${value}`);
    }
    for (const [id, value] of [[0x2, 1], [0x4, 2 ** 31 - 1], [0x5, 16_384], [0x5, 2 ** 24 - 1], [0x9, 2 ** 32 - 1]] as const) {
      new FrameParser(recorder().sink, false).push(setting(id, value));
    }
  });

  it('ends the connection on PRIORITY on stream 0, a stream depending on itself, and a WINDOW_UPDATE of 0 (RFC 9113 §6.3, §5.3.1, §6.9)', () => {
    const dependency = (on: number): Buffer => Buffer.from([0, 0, 0, on, 15]);
    const increment = (n: number): Buffer => Buffer.from([0, 0, 0, n]);
    for (const [what, bytes, code] of [
      ['PRIORITY on stream 0', frame(FrameType.PRIORITY, 0, 0, dependency(1)), 0x1],
      ['PRIORITY depending on itself', frame(FrameType.PRIORITY, 0, 3, dependency(3)), 0x1],
      ['HEADERS depending on itself', frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.PRIORITY, 3, Buffer.concat([dependency(3), Buffer.from([0x82])])), 0x1],
      ['HEADERS too short for its priority fields', frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.PRIORITY, 3, Buffer.from([0, 0])), 0x6],
      ['WINDOW_UPDATE of 0 on the connection', frame(FrameType.WINDOW_UPDATE, 0, 0, increment(0)), 0x1],
      ['WINDOW_UPDATE of 0 on a stream', frame(FrameType.WINDOW_UPDATE, 0, 1, increment(0)), 0x1],
    ] as const) {
      assert.throws(() => new FrameParser(recorder().sink, false).push(bytes), (err: FrameError) => err.h2Code === code, what);
    }
    // A PRIORITY on another stream is read and reported; one of the wrong length is left to the receiver's stream error.
    const { sink, events } = recorder();
    const p = new FrameParser(sink, false);
    p.push(Buffer.concat([frame(FrameType.PRIORITY, 0, 3, dependency(1)), frame(FrameType.PRIORITY, 0, 5, Buffer.alloc(4))]));
    assert.deepEqual(events, [['other', FrameType.PRIORITY, 0, 3, 5], ['other', FrameType.PRIORITY, 0, 5, 4]]);
  });

  it('caps a header block spread over CONTINUATIONs', () => {
    const p = new FrameParser(recorder().sink, false, 1024);
    p.push(frame(FrameType.HEADERS, 0, 1, Buffer.alloc(600, 0x82)));
    assert.throws(() => p.push(frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(600, 0x82))), (err: FrameError) => err.h2Code === 0xb);
  });

  it('survives random bytes after the preface: FrameError or events, never another exception', () => {
    let seed = 3;
    const rand = (n: number): number => (((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n);
    for (let round = 0; round < 3000; round++) {
      const noise = Buffer.from(Array.from({ length: 1 + rand(64) }, () => rand(256)));
      // Small lengths, so that most frames complete.
      if (noise.length > 2) noise[0] = noise[1] = 0;
      const p = new FrameParser(recorder().sink, false);
      try {
        p.push(noise);
      } catch (err) {
        assert.ok(err instanceof FrameError, `${noise.toString('hex')}: ${String(err)}`);
      }
    }
  });
});

/**
 * Translate mode: what reaches the other side when each completed header block
 * is replaced by a marker. Expected: the corpus byte for byte, less the frames
 * of header blocks, a marker where each block ends.
 */
function translated(bytes: Buffer, cuts: number[]): Buffer {
  const out: Buffer[] = [];
  const { sink } = recorder();
  const p = new FrameParser({ ...sink, headers: (id) => void out.push(Buffer.from(`<block ${id}>`)) }, true, undefined, (b) => out.push(Buffer.from(b)));
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    p.push(bytes.subarray(at, cut));
    at = cut;
  }
  return Buffer.concat(out);
}

function withoutHeaderBlocks(bytes: Buffer): Buffer {
  const out: Buffer[] = [bytes.subarray(0, CLIENT_PREFACE.length)];
  for (let at = CLIENT_PREFACE.length; at < bytes.length; ) {
    const end = at + 9 + bytes.readUIntBE(at, 3);
    const type = bytes[at + 3]!;
    if (type !== FrameType.HEADERS && type !== FrameType.CONTINUATION && type !== FrameType.PUSH_PROMISE) out.push(bytes.subarray(at, end));
    else if (bytes[at + 4]! & Flag.END_HEADERS) out.push(Buffer.from(`<block ${bytes.readUInt32BE(at + 5)}>`));
    at = end;
  }
  return Buffer.concat(out);
}

describe('frame parser in translate mode', () => {
  const expected = withoutHeaderBlocks(CORPUS);

  it('passes every frame but the header blocks byte for byte, each block written where it ended', () => {
    assert.deepEqual(translated(CORPUS, []), expected);
    assert.ok(expected.length < CORPUS.length);
  });

  it('passes the same bytes with the stream split at every byte', () => {
    const cuts = Array.from({ length: CORPUS.length - 1 }, (_, i) => i + 1);
    assert.deepEqual(translated(CORPUS, cuts), expected);
  });

  it('passes the same bytes for 2,000 random splits', () => {
    let seed = 7;
    const rand = (n: number): number => (((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n);
    for (let round = 0; round < 2000; round++) {
      const cuts = new Set<number>();
      const count = rand(30);
      for (let k = 0; k < count; k++) cuts.add(1 + rand(CORPUS.length - 1));
      const sorted = [...cuts].sort((a, b) => a - b);
      assert.deepEqual(translated(CORPUS, sorted), expected, `cuts ${sorted.join(',')}`);
    }
  });
});
