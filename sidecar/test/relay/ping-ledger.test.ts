// PINGs awaiting their ACK through the relay: the ACK of one goes on; an ACK of
// none is ignored (RFC 9113 §6.7); those left unanswered can be taken over.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PingLedger } from '../../src/relay/ping-ledger.ts';

const opaque = (n: number): Buffer => Buffer.from([0, 0, 0, 0, 0, 0, 0, n]);

describe('PingLedger', () => {
  it('passes the ACK of each PING sent once, and no other', () => {
    const p = new PingLedger();
    p.sent(opaque(1));
    p.sent(opaque(2));
    assert.equal(p.acked(opaque(3)), false);
    assert.equal(p.acked(opaque(2)), true);
    assert.equal(p.acked(opaque(2)), false);
    assert.equal(p.acked(opaque(1)), true);
  });

  it('passes every ACK once more PINGs were left unanswered than it keeps', () => {
    const p = new PingLedger();
    for (let i = 0; i < 17; i++) p.sent(opaque(i));
    assert.equal(p.acked(opaque(0)), true, 'the forgotten one');
    assert.equal(p.acked(opaque(200)), true);
  });

  it('hands over the PINGs left unanswered, oldest first, once', () => {
    const p = new PingLedger();
    p.sent(opaque(1));
    p.sent(opaque(2));
    p.sent(opaque(3));
    p.acked(opaque(2));
    assert.deepEqual(p.drain(), [opaque(1), opaque(3)]);
    assert.deepEqual(p.drain(), []);
  });
});
