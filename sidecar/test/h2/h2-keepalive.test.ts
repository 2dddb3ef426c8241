// The PING keepalive's rules, on a clock the test moves: PING only a quiet
// connection, an unanswered PING ends it after the timeout, anything read in the
// meantime is an answer, and its own ACKs are told from everyone else's (the
// relay drops those rather than pass them on). Then on two real node:http2
// sessions: a peer that stops reading is found gone, one that answers is not.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { describe, it } from 'node:test';
import { H2Keepalive, keepNodeSessionAlive, type KeepaliveTimers, type PingPort } from '../../src/h2/h2-keepalive.ts';

class FakeClock implements KeepaliveTimers {
  t = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  private next = 0;
  private readonly io: (() => void)[] = [];
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.next;
    this.due.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.due.delete(h as number);
  }
  afterIo(fn: () => void): void {
    this.io.push(fn);
  }
  /** Moves the clock on, running timers and then the checks deferred past I/O, in order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const [id, next] = [...this.due].sort((a, b) => a[1].at - b[1].at)[0] ?? [];
      if (id === undefined || next!.at > end) break;
      this.due.delete(id);
      this.t = next!.at;
      next!.fn();
      for (const fn of this.io.splice(0)) fn();
    }
    this.t = end;
  }
}

function port(): PingPort & { pings: Buffer[]; read: number; timeouts: number } {
  const p = {
    pings: [] as Buffer[],
    read: 0,
    timeouts: 0,
    send: (opaque: Buffer) => (p.pings.push(opaque), true),
    bytesRead: () => p.read,
    timedOut: () => void p.timeouts++,
  };
  return p;
}

const noJitter = (): number => 0.5;

describe('H2Keepalive', () => {
  it('PINGs a quiet connection every interval while it answers', () => {
    const clock = new FakeClock();
    const p = port();
    const k = new H2Keepalive({ intervalMs: 1000, timeoutMs: 500 }, p, clock, noJitter);
    k.start();
    for (let i = 1; i <= 5; i++) {
      clock.advance(1000);
      assert.equal(p.pings.length, i);
      p.read += 17;
      assert.equal(k.acked(p.pings.at(-1)!), true);
    }
    assert.equal(p.timeouts, 0);
  });

  it('ends the connection when a PING and nothing else comes back within the timeout', () => {
    const clock = new FakeClock();
    const p = port();
    new H2Keepalive({ intervalMs: 1000, timeoutMs: 500 }, p, clock, noJitter).start();
    clock.advance(1000);
    assert.equal(p.pings.length, 1);
    clock.advance(499);
    assert.equal(p.timeouts, 0);
    clock.advance(1);
    assert.equal(p.timeouts, 1);
    clock.advance(10_000);
    assert.equal(p.timeouts, 1, 'once');
    assert.equal(p.pings.length, 1, 'and no more PINGs');
  });

  it('sends no PING on a connection that reads', () => {
    const clock = new FakeClock();
    const p = port();
    new H2Keepalive({ intervalMs: 1000, timeoutMs: 500 }, p, clock, noJitter).start();
    for (let i = 0; i < 10; i++) {
      p.read += 100;
      clock.advance(1000);
    }
    assert.equal(p.pings.length, 0);
  });

  it('takes bytes read while the PING waits as an answer (its ACK may be queued behind them)', () => {
    const clock = new FakeClock();
    const p = port();
    const k = new H2Keepalive({ intervalMs: 1000, timeoutMs: 500 }, p, clock, noJitter);
    k.start();
    clock.advance(1000);
    p.read += 16_384;
    clock.advance(500);
    assert.equal(p.timeouts, 0);
    // The late ACK is still the keepalive's own: the relay must not pass it on.
    assert.equal(k.acked(p.pings[0]!), true);
  });

  it('tells its own ACKs from the peer\'s', () => {
    const clock = new FakeClock();
    const p = port();
    const k = new H2Keepalive({ intervalMs: 1000, timeoutMs: 500 }, p, clock, noJitter);
    k.start();
    clock.advance(1000);
    assert.equal(k.acked(Buffer.from('grpc-bdp')), false, 'a BDP ping of the client');
    const forged = Buffer.from(p.pings[0]!);
    forged.writeUInt32BE(999, 4);
    assert.equal(k.acked(forged), false, 'our mark, a sequence never sent');
    assert.equal(k.acked(p.pings[0]!), true);
    assert.equal(k.acked(p.pings[0]!), false, 'each ACK once');
  });

  it('is off with an interval or a timeout of 0', () => {
    const clock = new FakeClock();
    const p = port();
    const k = new H2Keepalive({ intervalMs: 0, timeoutMs: 500 }, p, clock, noJitter);
    k.start();
    clock.advance(60_000);
    assert.equal(k.enabled, false);
    assert.equal(p.pings.length, 0);
  });
});

describe('keepNodeSessionAlive', () => {
  it('finds a peer gone that stops reading, and keeps one that answers', { timeout: 10_000 }, async () => {
    // The server side of a connection the test can freeze: a TCP hop that stops forwarding, as a blackholed network does.
    const server = http2.createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const serverPort = (server.address() as net.AddressInfo).port;
    let frozen = false;
    const hop = net.createServer((down) => {
      const up = net.connect(serverPort, '127.0.0.1');
      down.on('data', (d) => void (frozen || up.write(d)));
      up.on('data', (d) => void (frozen || down.write(d)));
      down.on('error', () => {});
      up.on('error', () => {});
      down.on('close', () => up.destroy());
    });
    await new Promise<void>((r) => hop.listen(0, '127.0.0.1', r));
    const hopPort = (hop.address() as net.AddressInfo).port;

    const answered = http2.connect(`http://127.0.0.1:${serverPort}`);
    const blackholed = http2.connect(`http://127.0.0.1:${hopPort}`);
    let answeredTimeouts = 0;
    const started = Date.now();
    let gone = 0;
    const k = keepNodeSessionAlive(answered, { intervalMs: 200, timeoutMs: 300 }, () => answeredTimeouts++);
    const goneAt = new Promise<number>((resolve) => keepNodeSessionAlive(blackholed, { intervalMs: 200, timeoutMs: 300 }, () => resolve((gone = Date.now()))));
    await new Promise((r) => blackholed.once('connect', r));
    frozen = true;
    await goneAt;
    assert.ok(gone - started < 1500, `found gone after ${gone - started} ms (interval 200 ± 10 %, timeout 300)`);
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(answeredTimeouts, 0);
    assert.ok(k.answered >= 2, `the live session answered ${k.answered} PINGs`);
    answered.destroy();
    blackholed.destroy();
    hop.close();
    server.close();
  });
});
