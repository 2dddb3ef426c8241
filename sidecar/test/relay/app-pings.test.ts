// The app's PINGs to the client awaiting its ACK: the ACK of one goes on to the
// app; an ACK of none is ignored (RFC 9113 §6.7).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AppPings } from '../../src/relay/app-pings.ts';

const opaque = (n: number): Buffer => Buffer.from([0, 0, 0, 0, 0, 0, 0, n]);

describe('AppPings', () => {
  it('passes the ACK of each PING the app sent once, and no other', () => {
    const p = new AppPings();
    p.sent(opaque(1));
    p.sent(opaque(2));
    assert.equal(p.acked(opaque(3)), false);
    assert.equal(p.acked(opaque(2)), true);
    assert.equal(p.acked(opaque(2)), false);
    assert.equal(p.acked(opaque(1)), true);
  });

  it('passes every ACK once more PINGs were left unanswered than it keeps', () => {
    const p = new AppPings();
    for (let i = 0; i < 17; i++) p.sent(opaque(i));
    assert.equal(p.acked(opaque(0)), true, 'the forgotten one');
    assert.equal(p.acked(opaque(200)), true);
  });
});
