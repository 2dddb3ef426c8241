// The calls in flight a scrape reads: kept in the order they started, each taken
// off once however it is found (its own observation, or a search when another
// observer took its slot), never left behind to count as active forever.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CallObservation } from '../../src/observe/metrics/call-recorder.ts';
import { InFlightCalls } from '../../src/observe/metrics/in-flight.ts';
import type { RouteCells } from '../../src/observe/metrics/route-cells.ts';
import { endedCall } from './records.ts';

const cells = {} as RouteCells;
const listed = (l: InFlightCalls<CallObservation>): number[] => {
  const ids: number[] = [];
  l.forEach((call, obs) => {
    assert.equal(obs.call, call);
    ids.push(call.id);
  });
  return ids;
};

describe('InFlightCalls', () => {
  it('lists calls in the order they started, and takes each off by its observation', () => {
    const l = new InFlightCalls<CallObservation>();
    const calls = [endedCall(), endedCall(), endedCall()];
    const obs = calls.map((c) => {
      const o = new CallObservation(cells);
      l.add(c, o);
      return o;
    });
    assert.deepEqual(listed(l), calls.map((c) => c.id));
    assert.equal(l.delete(calls[1]!, obs[1]), true);
    assert.deepEqual(listed(l), [calls[0]!.id, calls[2]!.id]);
    assert.equal(l.delete(calls[1]!, obs[1]), false, 'a call taken off once is not on the list');
    assert.equal(l.has(calls[1]!, obs[1]), false);
    assert.equal(l.delete(calls[2]!, obs[2]), true);
    assert.equal(l.delete(calls[0]!, obs[0]), true);
    assert.deepEqual(listed(l), []);
  });

  it('finds a call whose observation it no longer has, and takes off every entry of it', () => {
    const l = new InFlightCalls<CallObservation>();
    const a = endedCall();
    const b = endedCall();
    l.add(a, new CallObservation(cells));
    l.add(b, new CallObservation(cells));
    l.add(a, new CallObservation(cells));
    assert.equal(l.has(a, undefined), true);
    assert.equal(l.delete(a, undefined), true);
    assert.deepEqual(listed(l), [b.id]);
    assert.equal(l.delete(a, undefined), false);
  });

  it("leaves alone an observation on another observer's list", () => {
    const mine = new InFlightCalls<CallObservation>();
    const theirs = new InFlightCalls<CallObservation>();
    const a = endedCall();
    const b = endedCall();
    const theirObs = new CallObservation(cells);
    theirs.add(a, theirObs);
    mine.add(b, new CallObservation(cells));
    assert.equal(mine.delete(a, theirObs), false);
    assert.deepEqual(listed(theirs), [a.id]);
    assert.deepEqual(listed(mine), [b.id]);
  });

  it('holds what a Set of the calls would, for any order of starts and ends', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.nat(7), fc.boolean()), { maxLength: 60 }), (steps) => {
        const calls = Array.from({ length: 8 }, () => endedCall());
        const own = new Map<number, CallObservation>();
        const l = new InFlightCalls<CallObservation>();
        const set = new Set<number>();
        for (const [start, k, byObservation] of steps) {
          const call = calls[k]!;
          if (start && !set.has(call.id)) {
            const o = new CallObservation(cells);
            own.set(call.id, o);
            l.add(call, o);
            set.add(call.id);
          } else if (!start) {
            assert.equal(l.delete(call, byObservation ? own.get(call.id) : undefined), set.delete(call.id));
          }
          assert.deepEqual(listed(l), [...set]);
        }
      }),
      { numRuns: 300 },
    );
  });
});
