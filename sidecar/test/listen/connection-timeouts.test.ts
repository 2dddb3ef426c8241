// The sweep's rules on a clock the test moves: a call in flight is never timed
// out, an HTTP/1.1 connection at rest is idle until bytes arrive, and from then
// its request headers are on the clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConnectionTimeouts, type Expiry } from '../../src/listen/connection-timeouts.ts';
import type { ConnectionRecord } from '../../src/call/observer.ts';

function conn(): ConnectionRecord {
  return { id: 1, side: 'downstream', httpVersion: '1.1', peer: 'p', openTime: 0, closeTime: 0, calls: 0, active: 0 };
}

describe('ConnectionTimeouts', () => {
  it('times out HTTP/1.1 request headers from the handover, and idle from the end of the last call', () => {
    let t = 0;
    let bytes = 10;
    const expired: Expiry[] = [];
    const c = conn();
    const timeouts = new ConnectionTimeouts(2000, 5000, () => t);
    const unwatch = timeouts.watch({ conn: c, bytesRead: () => bytes, expire: (why) => expired.push(why) });
    t = 1999;
    timeouts.sweep();
    assert.deepEqual(expired, []);
    // Headers complete: a call starts and ends; the connection rests.
    c.calls = 1;
    timeouts.sweep();
    t = 1999 + 4999;
    timeouts.sweep();
    assert.deepEqual(expired, [], 'idle, not yet 5 s');
    // The next request begins and trickles.
    bytes = 20;
    t += 1;
    timeouts.sweep();
    t += 1999;
    bytes = 21;
    timeouts.sweep();
    assert.deepEqual(expired, []);
    t += 1;
    timeouts.sweep();
    assert.deepEqual(expired, ['request_headers_timeout']);
    unwatch();
  });

  it('never times out a connection with a call in flight, and idles it out after', () => {
    let t = 0;
    const expired: Expiry[] = [];
    const c = conn();
    const timeouts = new ConnectionTimeouts(2000, 5000, () => t);
    timeouts.watch({ conn: c, expire: (why) => expired.push(why) });
    c.calls = 1;
    c.active = 1;
    for (t = 0; t <= 60_000; t += 1000) timeouts.sweep();
    assert.deepEqual(expired, []);
    // Quiet from the last sweep that saw the call in flight: the sweep is the clock's grain.
    t = 60_000;
    c.active = 0;
    timeouts.sweep();
    t += 4999;
    timeouts.sweep();
    assert.deepEqual(expired, []);
    t += 1;
    timeouts.sweep();
    assert.deepEqual(expired, ['idle_timeout']);
  });

  it('does nothing when both limits are 0', () => {
    let t = 0;
    const expired: Expiry[] = [];
    const timeouts = new ConnectionTimeouts(0, 0, () => t);
    timeouts.watch({ conn: conn(), bytesRead: () => 1, expire: (why) => expired.push(why) });
    t = 1e9;
    timeouts.sweep();
    assert.deepEqual(expired, []);
  });
});
