// The data plane's clock (clock.ts): outside a held read it is performance.now();
// within one (holdTime to releaseTime) every reading is the time of the first, so
// the times a read's frames put on a call's record are one time; and a read
// released lets the clock move on, so the ends recorded after the write are later.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { holdTime, now, releaseTime } from '../../src/clock.ts';

/** Spins until performance.now() has moved past `t`. */
function after(t: number): void {
  while (performance.now() <= t);
}

describe('clock', () => {
  it('moves on every reading outside a held read', () => {
    const a = now();
    after(a);
    assert.ok(now() > a);
  });

  it('gives a held read one time, read at its first reading, and moves on once released', () => {
    const before = now();
    after(before);
    holdTime();
    const first = now();
    assert.ok(first > before, 'the read is timed when it first asks, not before');
    after(first);
    assert.equal(now(), first);
    releaseTime();
    assert.ok(now() > first);
  });

  it('times each held read anew', () => {
    holdTime();
    const first = now();
    releaseTime();
    after(first);
    holdTime();
    const second = now();
    releaseTime();
    assert.ok(second > first);
  });
});
