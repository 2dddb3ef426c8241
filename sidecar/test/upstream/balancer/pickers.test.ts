import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Endpoint } from '../../../src/upstream/balancer/endpoint.ts';
import { EwmaPicker } from '../../../src/upstream/balancer/picker-ewma.ts';
import { LeastRequestPicker } from '../../../src/upstream/balancer/picker-least-request.ts';
import { RoundRobinPicker } from '../../../src/upstream/balancer/picker-round-robin.ts';
import { StickyPicker } from '../../../src/upstream/balancer/picker-sticky.ts';
import { twoChoices } from '../../../src/upstream/balancer/picker.ts';

function endpoints(n: number): Endpoint[] {
  return Array.from({ length: n }, (_, i) => new Endpoint(`10.0.0.${i + 1}:80`, { tls: false, host: `10.0.0.${i + 1}`, port: 80, authority: `10.0.0.${i + 1}:80`, href: `http://10.0.0.${i + 1}:80` }, 0));
}

function tally(picks: Endpoint[]): number[] {
  const m = new Map<string, number>();
  for (const p of picks) m.set(p.address, (m.get(p.address) ?? 0) + 1);
  return [...m.values()].sort((a, b) => a - b);
}

/** A deterministic random source, so the power-of-two tests are repeatable. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
}

describe('pickers', () => {
  it('round robin spreads calls exactly evenly', () => {
    const eps = endpoints(3);
    const p = new RoundRobinPicker();
    assert.deepEqual(tally(Array.from({ length: 300 }, () => p.pick(eps))), [100, 100, 100]);
  });

  it('two choices are always two different endpoints', () => {
    const eps = endpoints(4);
    const random = seeded(7);
    for (let i = 0; i < 1000; i++) {
      const [a, b] = twoChoices(eps, random);
      assert.notEqual(a, b);
    }
  });

  it('least request keeps calls off an endpoint with many in flight', () => {
    const eps = endpoints(3);
    eps[0]!.active = 50;
    const p = new LeastRequestPicker(seeded(1));
    const picks = Array.from({ length: 300 }, () => p.pick(eps));
    assert.equal(picks.filter((e) => e === eps[0]).length, 0);
  });

  it('ewma prefers the faster endpoint', () => {
    const eps = endpoints(2);
    const p = new EwmaPicker(seeded(3), () => 1000);
    eps[0]!.active = 1;
    eps[0]!.finished(1000, 200);
    eps[1]!.active = 1;
    eps[1]!.finished(1000, 5);
    const picks = Array.from({ length: 100 }, () => p.pick(eps));
    assert.equal(picks.filter((e) => e === eps[1]).length, 100);
  });

  it('ewma tries again an endpoint that one slow call put out of favour, once it has sat idle', () => {
    const eps = endpoints(2);
    let now = 0;
    const p = new EwmaPicker(seeded(5), () => now);
    eps[0]!.active = 1;
    eps[0]!.finished(0, 200);
    // The other endpoint keeps answering in 5 ms and keeps its estimate fresh.
    const busy = (t: number): void => {
      eps[1]!.active = 1;
      eps[1]!.finished(t, 5);
    };
    busy(1000);
    now = 1000;
    assert.equal(p.pick(eps), eps[1]);
    busy(40_000);
    now = 40_000;
    assert.equal(p.pick(eps), eps[0], 'the idle endpoint\'s 200 ms has decayed below the busy one\'s 5 ms');
  });

  it('sticky pins each client connection to one endpoint until it closes', () => {
    const eps = endpoints(3);
    const p = new StickyPicker();
    const first = p.pick(eps, 1);
    for (let i = 0; i < 50; i++) assert.equal(p.pick(eps, 1), first);
    assert.notEqual(p.pick(eps, 2), first);
    p.connectionClosed(1);
    assert.notEqual(p.pick(eps, 1), undefined);
  });
});

describe('Endpoint', () => {
  it('backs off after failures, doubling, and recovers on success', () => {
    const [e] = endpoints(1);
    e!.active = 3;
    e!.finished(0, undefined);
    assert.equal(e!.usable(500), false);
    assert.equal(e!.usable(1000), true);
    e!.finished(1000, undefined);
    assert.equal(e!.usable(2500), false);
    assert.equal(e!.usable(3000), true);
    e!.finished(3000, 10);
    assert.equal(e!.usable(3000), true);
  });

  it('keeps a peak EWMA: slow calls count at once, fast ones decay in', () => {
    const [e] = endpoints(1);
    e!.active = 3;
    e!.finished(0, 10);
    e!.finished(100, 100);
    assert.equal(e!.ewmaMs, 100);
    e!.finished(10_100, 10);
    assert.ok(e!.ewmaMs < 100 && e!.ewmaMs > 10);
  });
});
