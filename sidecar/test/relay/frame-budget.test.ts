import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ClientFrameBudget, INBOUND_FRAME_LIMITS, headerListRefusal } from '../../src/relay/frame-budget.ts';
import { DEFAULT_MAX_HEADER_BLOCK } from '../../src/relay/frame-parser.ts';
import { CLIENT_PREFACE, Flag, FrameType } from '../../src/h2/frame-types.ts';
import { frame } from '../../src/h2/frames.ts';

const windowUpdate = (): Buffer => frame(FrameType.WINDOW_UPDATE, 0, 0, Buffer.from([0, 0, 0, 1]));
const headers = (id: number, flags = Flag.END_HEADERS | Flag.END_STREAM): Buffer => frame(FrameType.HEADERS, flags, id, Buffer.from([0x82, 0x86, 0x84]));
const settingsPayload = (id: number, value: number): Buffer => {
  const p = Buffer.alloc(6);
  p.writeUInt16BE(id, 0);
  p.writeUInt32BE(value, 2);
  return p;
};

/** Feeds the client's bytes after its preface: whole, then (on a fresh budget) one byte at a time; both must agree. */
function feed(frames: Buffer[], setup: (b: ClientFrameBudget) => void = () => {}): string | undefined {
  const bytes = Buffer.concat([CLIENT_PREFACE, ...frames]);
  const whole = new ClientFrameBudget();
  setup(whole);
  const a = whole.read(bytes)?.reason;
  const split = new ClientFrameBudget();
  setup(split);
  let b: string | undefined;
  for (let i = 0; i < bytes.length && b === undefined; i++) b = split.read(bytes.subarray(i, i + 1))?.reason;
  assert.equal(b, a, 'byte by byte reads the same');
  return a;
}

describe('ClientFrameBudget', () => {
  it('lets an honest connection through: SETTINGS, its WINDOW_UPDATE, requests with bodies, pings, acks', () => {
    const frames = [frame(FrameType.SETTINGS, 0, 0), windowUpdate(), frame(FrameType.SETTINGS, Flag.ACK, 0)];
    for (let id = 1; id < 200; id += 2) frames.push(headers(id, Flag.END_HEADERS), frame(FrameType.DATA, Flag.END_STREAM, id, Buffer.from('hi')), windowUpdate());
    frames.push(frame(FrameType.PING, 0, 0, Buffer.alloc(8)), frame(FrameType.PING, Flag.ACK, 0, Buffer.alloc(8)));
    assert.equal(feed(frames), undefined);
  });

  it('allows 5 + 2 × (streams + 10 × DATA frames sent) WINDOW_UPDATEs (Envoy’s formula), and cuts the next', () => {
    assert.equal(feed(Array.from({ length: 5 }, windowUpdate)), undefined);
    assert.equal(feed(Array.from({ length: 6 }, windowUpdate)), 'window_update_flood');
    // One stream, two DATA frames sent to the client: 5 + 2 × (1 + 20) = 47.
    const sent = (b: ClientFrameBudget): void => (b.dataFrameSent(), b.dataFrameSent());
    assert.equal(feed([headers(1), ...Array.from({ length: 47 }, windowUpdate)], sent), undefined);
    assert.equal(feed([headers(1), ...Array.from({ length: 48 }, windowUpdate)], sent), 'window_update_flood');
    assert.equal(INBOUND_FRAME_LIMITS.windowUpdatesPerDataFrameSent, 10);
  });

  it('allows 100 PRIORITY frames per stream, plus 100', () => {
    const prio = (): Buffer => frame(FrameType.PRIORITY, 0, 1, Buffer.from([0, 0, 0, 0, 15]));
    assert.equal(feed(Array.from({ length: 100 }, prio)), undefined);
    assert.equal(feed(Array.from({ length: 101 }, prio)), 'priority_flood');
    assert.equal(feed([headers(1), ...Array.from({ length: 200 }, prio)]), undefined);
  });

  it('cuts the second empty DATA, HEADERS or CONTINUATION frame in a row without END_STREAM', () => {
    const empty = frame(FrameType.DATA, 0, 1);
    assert.equal(feed([headers(1, Flag.END_HEADERS), empty]), undefined);
    assert.equal(feed([headers(1, Flag.END_HEADERS), empty, empty]), 'empty_frame_flood');
    assert.equal(feed([headers(1, Flag.END_HEADERS), empty, frame(FrameType.DATA, 0, 1, Buffer.from('x')), empty]), undefined, 'a frame with data in it ends the run');
    assert.equal(feed([headers(1, Flag.END_HEADERS), empty, frame(FrameType.DATA, Flag.END_STREAM, 1)]), undefined, 'an empty END_STREAM is how a body ends');
    // Padded, with nothing but padding in it (pad length 3, 3 octets of padding).
    const padded = frame(FrameType.DATA, Flag.PADDED, 1, Buffer.from([3, 0, 0, 0]));
    assert.equal(feed([headers(1, Flag.END_HEADERS), padded, padded]), 'empty_frame_flood');
    const emptyBlock = frame(FrameType.HEADERS, 0, 3);
    assert.equal(feed([emptyBlock, frame(FrameType.CONTINUATION, 0, 3)]), 'empty_frame_flood');
  });

  it('cuts a header block continued past 8 CONTINUATION frames, as nghttp2 does, or past the relay’s header block cap', () => {
    const cont = (): Buffer => frame(FrameType.CONTINUATION, 0, 1, Buffer.from('x'.repeat(10)));
    assert.equal(feed([headers(1, 0), ...Array.from({ length: 8 }, cont)]), undefined);
    assert.equal(feed([headers(1, 0), ...Array.from({ length: 9 }, cont)]), 'continuation_flood');
    // Frames larger than the default 16 KiB, as an app that raised SETTINGS_MAX_FRAME_SIZE takes.
    const big = (): Buffer => frame(FrameType.CONTINUATION, 0, 1, Buffer.alloc(40_000, 0x41));
    const n = Math.ceil(DEFAULT_MAX_HEADER_BLOCK / 40_000);
    assert.ok(n <= 8);
    assert.equal(feed([headers(1, 0), ...Array.from({ length: n }, big)]), 'continuation_flood');
  });

  it('holds PING and SETTINGS to the listener’s budgets; their ACKs are free', () => {
    const pings = (n: number, flags = 0): Buffer[] => Array.from({ length: n }, () => frame(FrameType.PING, flags, 0, Buffer.alloc(8)));
    assert.equal(feed(pings(200)), undefined);
    assert.equal(feed(pings(201)), 'ping_flood');
    assert.equal(feed(pings(1000, Flag.ACK)), undefined);
    assert.equal(feed(Array.from({ length: 51 }, () => frame(FrameType.SETTINGS, 0, 0))), 'settings_flood');
    assert.equal(feed(Array.from({ length: 1000 }, () => frame(FrameType.SETTINGS, Flag.ACK, 0))), undefined);
  });

  it('holds a client to the stream limit only once it acknowledged the SETTINGS that set it', () => {
    const b = new ClientFrameBudget();
    b.upstreamSettings(settingsPayload(0x3, 2));
    b.upstreamSettings(settingsPayload(0x4, 65535));
    assert.equal(b.overStreamLimit(5), false, 'not acknowledged yet');
    b.settingsAcknowledged();
    assert.equal(b.overStreamLimit(1), false);
    assert.equal(b.overStreamLimit(2), true);
    b.settingsAcknowledged();
    assert.equal(b.overStreamLimit(2), true, 'SETTINGS without the setting leave the limit as it was');
  });

  it('refuses a header list with a 431 the client’s table decodes, once per connection', () => {
    const [head, body] = headerListRefusal(7, () => Buffer.from([0x20]));
    const h = head();
    assert.deepEqual([h[3], h[4], h.readUInt32BE(5), h.subarray(9)], [FrameType.HEADERS, Flag.END_HEADERS, 7, Buffer.from([0x20])]);
    assert.deepEqual([body[3], body[4], body.readUInt32BE(5)], [FrameType.DATA, Flag.END_STREAM, 7]);
    const b = new ClientFrameBudget();
    assert.equal(b.firstHeaderListRefused(), true);
    assert.equal(b.firstHeaderListRefused(), false);
  });

  it('keeps saying so once tripped', () => {
    const b = new ClientFrameBudget();
    assert.equal(b.read(Buffer.concat([CLIENT_PREFACE, ...Array.from({ length: 6 }, windowUpdate)]))?.reason, 'window_update_flood');
    assert.equal(b.read(frame(FrameType.SETTINGS, Flag.ACK, 0))?.reason, 'window_update_flood');
  });
});
