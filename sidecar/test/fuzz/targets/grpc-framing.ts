// Fuzz target: gRPC's length-prefixed message framing, as counted on the fly
// (src/protocol/message-framing.ts: gRPC, gRPC-Web binary and text, Connect
// streaming) and as cut into whole messages by the translating paths
// (src/transcode/grpc-frame.ts); and the status frames' readers.
//
// Input: [options] [cut seed] [body…]. Options: bits 0–1 the protocol, bit 2
// gRPC-Web text (base64), bits 3–4 FrameReader's message cap, bit 5 read the
// status as a Connect end-stream message rather than a unary error body.
//
// Findings: any exception but FrameReader's documented over-the-limit Error;
// counts or status frames that differ from a plain walk of the envelopes, or
// that depend on how the body was cut; base64 runs decoded otherwise than group
// by group; frames that do not write back to the bytes they came from; a
// status that is not a number of at most three digits.
import assert from 'node:assert/strict';
import { piecesOf, type FuzzTarget } from '../engine.ts';
import { MessageCounter, connectErrorCode, decodeBase64Runs, grpcStatusFromTrailerFrame } from '../../../src/protocol/message-framing.ts';
import { FrameReader, type Frame } from '../../../src/transcode/grpc-frame.ts';
import { envelope as frame } from '../../../src/protocol/grpc-envelope.ts';

const PROTOCOLS = ['grpc', 'grpc_web', 'connect', 'grpc_web'];
const END_FLAGS: Record<string, number> = { grpc: 0, grpc_web: 0x80, connect: 0x02 };
const CAPS = [4 * 1024 * 1024, 0, 16, 1000];
const MAX_END_FRAME_BYTES = 64 * 1024;
/** Whole 4-character groups, each padded only at its end: what a gRPC-Web text body is. */
const BASE64_GROUPS = /^(?:[A-Za-z0-9+/]{4}|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2}==)*$/;

interface Counted {
  messages: number;
  endFrame: string | undefined;
  endFrameKind: string | undefined;
  atBoundary: boolean;
}

function count(protocol: string, base64: boolean, pieces: Buffer[]): Counted {
  let firsts = 0;
  const c = MessageCounter.forProtocol(protocol, base64, () => firsts++);
  for (const p of pieces) c.push(p);
  assert.equal(firsts, c.messages > 0 ? 1 : 0, 'onFirstMessage not called exactly once');
  return { messages: c.messages, endFrame: c.endFrame?.toString('hex'), endFrameKind: c.endFrameKind, atBoundary: c.atBoundary };
}

/** The envelopes walked one after the other, as PROTOCOL-HTTP2.md describes them. */
function walk(bytes: Buffer, endFlag: number, cap: number): { counted: Counted; frames: Frame[]; overCap: boolean } {
  const counted: Counted = { messages: 0, endFrame: undefined, endFrameKind: undefined, atBoundary: false };
  const frames: Frame[] = [];
  let overCap = false;
  let i = 0;
  while (i + 5 <= bytes.length) {
    const flags = bytes[i]!;
    const length = bytes.readUInt32BE(i + 1);
    overCap ||= length > cap;
    if (i + 5 + length > bytes.length) break;
    const payload = bytes.subarray(i + 5, i + 5 + length);
    if (!overCap) frames.push({ flags, message: payload });
    if (endFlag !== 0 && flags & endFlag) {
      if (length <= MAX_END_FRAME_BYTES) {
        counted.endFrame = payload.toString('hex');
        counted.endFrameKind = endFlag === 0x80 ? 'grpc_web_trailers' : 'connect_end_stream';
      }
    } else counted.messages++;
    i += 5 + length;
  }
  counted.atBoundary = i === bytes.length;
  return { counted, frames, overCap };
}

function readFrames(pieces: Buffer[], cap: number): { frames: Frame[]; error: boolean; leftover: number } {
  const reader = new FrameReader(cap);
  const frames: Frame[] = [];
  for (const p of pieces) {
    try {
      frames.push(...reader.push(p));
    } catch (err) {
      if (!(err instanceof Error) || !/^message of \d+ bytes is over the \d+-byte limit$/.test(err.message)) throw err;
      return { frames, error: true, leftover: reader.leftover };
    }
  }
  return { frames, error: false, leftover: reader.leftover };
}

function checkStatus(payload: Buffer, endStream: boolean): void {
  const status = grpcStatusFromTrailerFrame(payload);
  if (status !== undefined) assert.ok(Number.isInteger(status) && status >= 0 && status <= 999, `grpc-status ${status}`);
  const code = connectErrorCode(payload, endStream);
  assert.ok(code === undefined || code === null || typeof code === 'string', `connect error code ${String(code)}`);
}

export const target: FuzzTarget = {
  maxLength: 2048,
  run(data) {
    if (data.length < 2) return;
    const options = data[0]!;
    const protocol = PROTOCOLS[options & 3]!;
    const base64 = (options & 4) !== 0;
    const cap = CAPS[(options >> 3) & 3]!;
    const body = data.subarray(2);
    const pieces = piecesOf(body, data[1]!);

    const whole = count(protocol, base64, [body]);
    let bytes = body;
    if (base64) {
      const text = body.toString('latin1');
      const usable = text.slice(0, text.length - (text.length % 4));
      bytes = decodeBase64Runs(usable);
      // Node's decoder skips characters outside the alphabet, which shifts the groups: only well-formed text is compared.
      if (!BASE64_GROUPS.test(usable)) return checkStatus(bytes, (options & 0x20) !== 0);
      const groups = usable.match(/.{4}/g) ?? [];
      assert.deepEqual(bytes, Buffer.concat(groups.map((g) => Buffer.from(g, 'base64'))), 'base64 runs decoded otherwise than group by group');
    }
    assert.deepEqual(count(protocol, base64, pieces), whole, 'the count depends on how the body was cut');
    const want = walk(bytes, END_FLAGS[protocol]!, cap);
    const expected = { ...want.counted, atBoundary: want.counted.atBoundary && body.length % (base64 ? 4 : 1) === 0 };
    assert.deepEqual(whole, expected, 'the count differs from a walk of the envelopes');
    checkStatus(whole.endFrame === undefined ? bytes : Buffer.from(whole.endFrame, 'hex'), (options & 0x20) !== 0);

    const read = readFrames(piecesOf(bytes, data[1]!), cap);
    assert.equal(read.error, want.overCap, read.error ? 'a message within the cap refused' : 'a message over the cap read');
    if (read.error) {
      assert.deepEqual(read.frames, want.frames.slice(0, read.frames.length), 'frames before the one over the cap read wrong');
      return;
    }
    assert.deepEqual(read.frames, want.frames, 'the frames read differ from a walk of the envelopes');
    const written = Buffer.concat(read.frames.map((f) => frame(f.message, f.flags)));
    assert.deepEqual(written, bytes.subarray(0, bytes.length - read.leftover), 'frames written back differ from the bytes read');
  },
  seeds: [
    // gRPC: an empty message, a 3-byte one, a compressed one.
    Buffer.from('0003' + '0000000000' + '0000000003616263' + '010000000178', 'hex'),
    // gRPC-Web: a message, then the trailer frame.
    Buffer.from('0101' + '00000000026869' + '800000001f' + Buffer.from('grpc-status:5\r\ngrpc-message:gone\r\n').subarray(0, 31).toString('hex'), 'hex'),
    // Connect streaming: a message, then the end-stream message with an error.
    Buffer.concat([Buffer.from('2202' + '0000000002' + '7b7d' + '02' + '0000001e', 'hex'), Buffer.from('{"error":{"code":"not_found"}}')]),
    // gRPC-Web text: two frames, each its own padded base64 run.
    Buffer.concat([Buffer.from([0x05, 0x02]), Buffer.from(Buffer.from('00000000016a', 'hex').toString('base64') + Buffer.from('800000000f677270632d7374617475733a300d0a', 'hex').toString('base64'), 'latin1')]),
  ],
  dictionary: [
    ...['0000000000', '8000000000', '0200000000', '00000000ff', '00ffffffff', '0000004000', '0000010000'].map((h) => Buffer.from(h, 'hex')),
    ...['grpc-status:', 'Grpc-Status: ', 'grpc-message:', '\r\n', '0', '16', '999', '1000', '=', '==', 'AAAA', 'gAAAAA', '{"error":{"code":"', '"}}', '{"code":null}', 'null', '[]'].map((s) => Buffer.from(s, 'latin1')),
  ],
};
