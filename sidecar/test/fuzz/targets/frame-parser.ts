// Fuzz target: the relay's HTTP/2 frame reader (src/relay/frame-parser.ts).
//
// Input: [options] [cut seed] [stream…]. Options: bit 0 the client's direction
// (the preface first), bit 1 the real preface put in front of the stream, bit 2
// translate mode (`pass`), bits 3–4 the header block cap, bits 5–6
// SETTINGS_MAX_FRAME_SIZE.
//
// Findings: an exception other than FrameError; a frame handed to the sink over
// the size caps, on a stream it may not use, or with a SETTINGS value RFC 9113
// forbids; a different outcome when the same bytes arrive in pieces; in translate
// mode, passed bytes other than the stream minus its header blocks, or a header
// block told before the frames ahead of it were passed; a failed parser that reads on.
import assert from 'node:assert/strict';
import { piecesOf, type FuzzTarget } from '../engine.ts';
import { DEFAULT_MAX_HEADER_BLOCK, FrameError, FrameParser, type FrameSink } from '../../../src/relay/frame-parser.ts';
import { CLIENT_PREFACE, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LENGTH, Flag, FrameType, LARGEST_FRAME_SIZE, MAX_WINDOW, Setting } from '../../../src/h2/frame-types.ts';

const HEADER_BLOCK_CAPS = [DEFAULT_MAX_HEADER_BLOCK, 0, 16, 300];
const FRAME_SIZES = [LARGEST_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, 64, 0];
const MAX_STREAM_ID = 0x7fffffff;

interface Options {
  preface: boolean;
  translate: boolean;
  maxHeaderBlock: number;
  maxFrameSize: number;
}

interface Outcome {
  events: string[];
  error: string | undefined;
  passed: Buffer;
  /** Bytes passed when each header block was told. */
  passedAtBlocks: number[];
}

function isHeaderBlock(type: number): boolean {
  return type === FrameType.HEADERS || type === FrameType.CONTINUATION || type === FrameType.PUSH_PROMISE;
}

/** RFC 9113 §6.5.2: the values no endpoint may send. */
function assertValidSettings(payload: Buffer): void {
  for (let i = 0; i + 6 <= payload.length; i += 6) {
    const id = payload.readUInt16BE(i);
    const value = payload.readUInt32BE(i + 2);
    if (id === Setting.ENABLE_PUSH) assert.ok(value <= 1, `SETTINGS_ENABLE_PUSH ${value} relayed`);
    if (id === Setting.INITIAL_WINDOW_SIZE) assert.ok(value <= MAX_WINDOW, `SETTINGS_INITIAL_WINDOW_SIZE ${value} relayed`);
    if (id === Setting.MAX_FRAME_SIZE) assert.ok(value >= DEFAULT_MAX_FRAME_SIZE && value <= LARGEST_FRAME_SIZE, `SETTINGS_MAX_FRAME_SIZE ${value} relayed`);
  }
}

function parse(pieces: Buffer[], o: Options): Outcome {
  const events: string[] = [];
  const passed: Buffer[] = [];
  let passedBytes = 0;
  const passedAtBlocks: number[] = [];
  let data: Buffer[] = [];
  let dataBytes = 0;
  const stream = (id: number, what: string): void => assert.ok(id > 0 && id <= MAX_STREAM_ID, `${what} on stream ${id}`);
  const sink: FrameSink = {
    headers(id, flags, block, promised) {
      stream(id, 'header block');
      assert.ok(block.length <= o.maxHeaderBlock, `a header block of ${block.length} bytes over the cap of ${o.maxHeaderBlock}`);
      assert.ok(promised <= MAX_STREAM_ID);
      passedAtBlocks.push(passedBytes);
      events.push(`headers ${id} ${flags} ${block.toString('hex')} ${promised}`);
    },
    data(id, chunk, flags, last) {
      stream(id, 'DATA');
      data.push(Buffer.from(chunk));
      dataBytes += chunk.length;
      assert.ok(dataBytes <= o.maxFrameSize && parser.frameLength <= o.maxFrameSize, `DATA of ${parser.frameLength} bytes over SETTINGS_MAX_FRAME_SIZE ${o.maxFrameSize}`);
      if (!last) return;
      events.push(`data ${id} ${flags} ${Buffer.concat(data).toString('hex')}`);
      data = [];
      dataBytes = 0;
    },
    rstStream(id, code, payload) {
      stream(id, 'RST_STREAM');
      assert.equal(payload.length, 4);
      events.push(`rst ${id} ${code}`);
    },
    settings(flags, payload) {
      assert.equal(payload.length % 6, 0);
      if (flags & Flag.ACK) assert.equal(payload.length, 0);
      assertValidSettings(payload);
      events.push(`settings ${flags} ${payload.toString('hex')}`);
    },
    goaway(last, code, payload) {
      assert.equal(payload.length, 8);
      assert.ok(last <= MAX_STREAM_ID);
      events.push(`goaway ${last} ${code}`);
    },
    windowUpdate(id, increment, payload) {
      assert.equal(payload.length, 4);
      assert.ok(increment <= MAX_WINDOW);
      events.push(`window ${id} ${increment}`);
    },
    ping(flags, payload) {
      assert.equal(payload.length, 8);
      events.push(`ping ${flags} ${payload.toString('hex')}`);
    },
    other(type, flags, id, length) {
      assert.ok(type === FrameType.PRIORITY || type > FrameType.CONTINUATION, `frame type ${type} told as other`);
      assert.ok(length <= o.maxFrameSize, `a frame of ${length} bytes over SETTINGS_MAX_FRAME_SIZE ${o.maxFrameSize}`);
      events.push(`other ${type} ${flags} ${id} ${length}`);
    },
  };
  const pass = o.translate
    ? (bytes: Buffer): void => {
        passed.push(Buffer.from(bytes));
        passedBytes += bytes.length;
      }
    : undefined;
  const parser = new FrameParser(sink, o.preface, o.maxHeaderBlock, pass);
  parser.maxFrameSize = o.maxFrameSize;
  let error: string | undefined;
  try {
    for (const p of pieces) parser.push(p);
  } catch (err) {
    if (!(err instanceof FrameError)) throw err;
    error = `${err.h2Code} ${err.message}`;
    const told = events.length;
    parser.push(Buffer.alloc(FRAME_HEADER_LENGTH + 8));
    assert.equal(events.length, told, 'a failed parser read on');
  }
  return { events, error, passed: Buffer.concat(passed), passedAtBlocks };
}

/**
 * What translate mode passes of a stream read without error: the preface and
 * every frame but a header block's, as far as they came (a frame header only
 * once whole); and how much of it precedes the end of each header block.
 */
function expectedPass(stream: Buffer, preface: boolean): { passed: Buffer; atBlocks: number[] } {
  const parts: Buffer[] = [];
  let bytes = 0;
  const atBlocks: number[] = [];
  let i = 0;
  if (preface) {
    i = Math.min(CLIENT_PREFACE.length, stream.length);
    parts.push(stream.subarray(0, i));
    bytes += i;
  }
  while (i + FRAME_HEADER_LENGTH <= stream.length) {
    const end = Math.min(stream.length, i + FRAME_HEADER_LENGTH + stream.readUIntBE(i, 3));
    const type = stream[i + 3]!;
    if (!isHeaderBlock(type)) {
      parts.push(stream.subarray(i, end));
      bytes += end - i;
    } else if (stream[i + 4]! & Flag.END_HEADERS && end - i === FRAME_HEADER_LENGTH + stream.readUIntBE(i, 3)) atBlocks.push(bytes);
    i = end;
  }
  return { passed: Buffer.concat(parts), atBlocks };
}

function frame(type: number, flags: number, id: number, payloadHex: string): Buffer {
  const payload = Buffer.from(payloadHex, 'hex');
  const head = Buffer.alloc(FRAME_HEADER_LENGTH);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(id, 5);
  return Buffer.concat([head, payload]);
}

export const target: FuzzTarget = {
  maxLength: 2048,
  run(input) {
    if (input.length < 2) return;
    const flags = input[0]!;
    const o: Options = {
      preface: (flags & 1) !== 0,
      translate: (flags & 4) !== 0,
      maxHeaderBlock: HEADER_BLOCK_CAPS[(flags >> 3) & 3]!,
      maxFrameSize: FRAME_SIZES[(flags >> 5) & 3]!,
    };
    const bytes = flags & 2 ? Buffer.concat([CLIENT_PREFACE, input.subarray(2)]) : input.subarray(2);
    const whole = parse([bytes], o);
    const cut = parse(piecesOf(bytes, input[1]!), o);
    assert.deepEqual(cut.events, whole.events, 'the frames told depend on how the bytes were cut');
    assert.equal(cut.error, whole.error, 'the error depends on how the bytes were cut');
    if (!o.translate || whole.error !== undefined) return;
    const want = expectedPass(bytes, o.preface);
    assert.deepEqual(whole.passed, want.passed, 'translate mode passed other bytes than the stream minus its header blocks');
    assert.deepEqual(cut.passed, want.passed, 'translate mode passed other bytes when the stream came in pieces');
    assert.deepEqual(whole.passedAtBlocks, want.atBlocks, 'a header block was told before the frames ahead of it were passed');
    assert.deepEqual(cut.passedAtBlocks, want.atBlocks, 'a header block was told before the frames ahead of it were passed (in pieces)');
  },
  seeds: [
    // Client direction with the preface, in translate mode: SETTINGS, HEADERS with
    // a CONTINUATION, padded DATA, PING, WINDOW_UPDATE, RST_STREAM, GOAWAY with
    // debug data, PRIORITY, an extension frame.
    Buffer.concat([
      Buffer.from([0x05, 0x03]),
      CLIENT_PREFACE,
      frame(FrameType.SETTINGS, 0, 0, '000200000000' + '000400ffffff'),
      frame(FrameType.HEADERS, Flag.END_STREAM, 1, '828684'),
      frame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, '4187'),
      frame(FrameType.DATA, Flag.PADDED, 1, '03' + '616263' + '000000'),
      frame(FrameType.PING, 0, 0, '0102030405060708'),
      frame(FrameType.WINDOW_UPDATE, 0, 0, '000003e8'),
      frame(FrameType.RST_STREAM, 0, 1, '00000008'),
      frame(FrameType.GOAWAY, 0, 0, '00000001' + '00000000' + '6263'),
      frame(FrameType.PRIORITY, 0, 3, '8000000010'),
      frame(0xff, 0, 5, 'abcd'),
    ]),
    // Server direction, one byte at a time: SETTINGS ACK, a padded PUSH_PROMISE, HEADERS with PRIORITY.
    Buffer.concat([
      Buffer.from([0x00, 0x00]),
      frame(FrameType.SETTINGS, Flag.ACK, 0, ''),
      frame(FrameType.PUSH_PROMISE, Flag.END_HEADERS | Flag.PADDED, 1, '02' + '00000002' + '8283' + '0000'),
      frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.PRIORITY | Flag.END_STREAM, 3, '0000000010' + '8284'),
    ]),
  ],
  dictionary: [
    CLIENT_PREFACE,
    Buffer.from('000000040000000000', 'hex'), // empty SETTINGS
    Buffer.from('000000040100000000', 'hex'), // SETTINGS ACK
    Buffer.from('000006040000000000000500004000', 'hex'), // SETTINGS_MAX_FRAME_SIZE 16384
    Buffer.from('000001010400000001', 'hex'), // HEADERS END_HEADERS, 1-byte block follows
    Buffer.from('000001010000000001', 'hex'), // HEADERS, a CONTINUATION to come
    Buffer.from('000001090400000001', 'hex'), // CONTINUATION END_HEADERS
    Buffer.from('000001090000000001', 'hex'), // CONTINUATION
    Buffer.from('000000000100000001', 'hex'), // DATA END_STREAM
    Buffer.from('000004000800000001', 'hex'), // DATA PADDED
    Buffer.from('000008060000000000', 'hex'), // PING
    Buffer.from('000008070000000000', 'hex'), // GOAWAY
    Buffer.from('000004080000000000', 'hex'), // WINDOW_UPDATE
    Buffer.from('000004030000000001', 'hex'), // RST_STREAM
    Buffer.from('000005050400000001', 'hex'), // PUSH_PROMISE
    Buffer.from('7fffffff', 'hex'),
    Buffer.from('ffffff', 'hex'),
  ],
};
