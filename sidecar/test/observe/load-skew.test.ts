import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LoadSkew } from '../../src/observe/load-skew.ts';

describe('LoadSkew', () => {
  it('is max / mean over every known endpoint, idle ones counting as 0', () => {
    let now = 100_000;
    const skew = new LoadSkew(() => now);
    for (let i = 0; i < 90; i++) skew.record('a:1');
    assert.equal(skew.ratio(['a:1', 'b:1', 'c:1']), 3);
    for (let i = 0; i < 90; i++) skew.record(['a:1', 'b:1', 'c:1'][i % 3]!);
    // a: 120, b: 30, c: 30 -> mean 60
    assert.equal(skew.ratio(['a:1', 'b:1', 'c:1']), 2);
    now += 1000;
    assert.equal(skew.ratio(['a:1']), 1);
  });

  it('forgets calls older than 30 s', () => {
    let now = 0;
    const skew = new LoadSkew(() => now);
    for (let i = 0; i < 10; i++) skew.record('a:1');
    now += 15_000;
    for (let i = 0; i < 10; i++) skew.record('b:1');
    assert.equal(skew.ratio(['a:1', 'b:1']), 1);
    now += 20_000; // a's calls are now 35 s old, b's 20 s
    assert.equal(skew.ratio(['a:1', 'b:1']), 2);
    now += 31_000;
    assert.equal(skew.ratio(['a:1', 'b:1']), 1, 'nothing in the window: reported as balanced');
  });
});
