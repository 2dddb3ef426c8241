// What the relay answers itself for the client's streams around its open calls
// (RFC 9113 §5.1, §5.1.1): idle streams, skipped ids, streams the client ended.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FrameError } from '../../src/relay/frame-parser.ts';
import { ClientStreamStates } from '../../src/relay/stream-states.ts';

const PROTOCOL_ERROR = 0x1;
const STREAM_CLOSED = 0x5;
const raises = (code: number) => (err: FrameError) => err.h2Code === code;

describe('ClientStreamStates', () => {
  it('opens growing odd ids, and refuses an even one or a lower one never opened (§5.1.1)', () => {
    const s = new ClientStreamStates();
    assert.equal(s.opening(1), true);
    assert.equal(s.opening(7), true);
    assert.equal(s.last, 7);
    assert.throws(() => s.opening(8), raises(PROTOCOL_ERROR), 'even');
    assert.throws(() => s.opening(3), raises(PROTOCOL_ERROR), 'skipped: 3');
    assert.throws(() => s.opening(5), raises(PROTOCOL_ERROR), 'skipped: 5');
    // Stream 1 was opened: a late header block on it goes on to the app.
    assert.equal(s.opening(1), false);
  });

  it('takes the first stream at any odd id, the ids below it skipped', () => {
    const s = new ClientStreamStates();
    assert.equal(s.opening(5), true);
    assert.throws(() => s.opening(1), raises(PROTOCOL_ERROR));
    assert.throws(() => s.opening(3), raises(PROTOCOL_ERROR));
  });

  it('refuses DATA, RST_STREAM and WINDOW_UPDATE on an idle stream (§5.1, §6.4)', () => {
    const s = new ClientStreamStates();
    s.opening(1);
    assert.throws(() => s.data(3, undefined), raises(PROTOCOL_ERROR));
    assert.throws(() => s.control(5, 'RST_STREAM'), raises(PROTOCOL_ERROR));
    assert.throws(() => s.control(5, 'WINDOW_UPDATE'), raises(PROTOCOL_ERROR));
    // Stream 1 is over, not idle: frames in flight on it go on.
    s.data(1, undefined);
    s.control(1, 'RST_STREAM');
    s.control(1, 'WINDOW_UPDATE');
  });

  it('answers DATA and HEADERS on a stream the client ended STREAM_CLOSED, and lets RST_STREAM and WINDOW_UPDATE go on (§5.1)', () => {
    const s = new ClientStreamStates();
    s.opening(1);
    s.opening(3);
    s.clientEnded(1);
    assert.throws(() => s.data(1, undefined), raises(STREAM_CLOSED));
    assert.throws(() => s.opening(1), raises(STREAM_CLOSED));
    s.control(1, 'RST_STREAM');
    s.control(1, 'WINDOW_UPDATE');
    // Stream 3 ended by the app, not the client: its late DATA is the app's to ignore.
    s.data(3, undefined);
    // An open call whose request is over.
    assert.throws(() => s.data(3, { requestEnded: true }), raises(STREAM_CLOSED));
    s.data(3, { requestEnded: false });
  });

  it('remembers the last 64 streams the client ended; older ones are left to the app', () => {
    const s = new ClientStreamStates();
    for (let id = 1; id <= 2 * 100 - 1; id += 2) {
      s.opening(id);
      s.clientEnded(id);
    }
    s.data(1, undefined);
    assert.throws(() => s.data(199, undefined), raises(STREAM_CLOSED));
    assert.throws(() => s.data(199 - 2 * 63, undefined), raises(STREAM_CLOSED));
    s.data(199 - 2 * 64, undefined);
  });
});
