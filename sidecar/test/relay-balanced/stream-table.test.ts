// The balanced relay's table of streams by id (stream-table.ts) against a Map:
// whatever mix of sets, deletes and gets, over ids that cluster as a
// connection's do (odd, close together, each new) and ids anywhere up to 2^31-1,
// it holds what a Map holds, through growth and the shifts deletions make.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { StreamTable } from '../../src/relay-balanced/stream-table.ts';

type Op = { op: 'set' | 'delete' | 'get'; id: number };

// Mostly from a few ids, so that deletes and gets find what sets put; now and then anywhere.
const id = fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 1, max: 24 }) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 0x7fffffff }) });
const op: fc.Arbitrary<Op> = fc.record({ op: fc.constantFrom('set', 'set', 'delete', 'get') as fc.Arbitrary<Op['op']>, id });

function check(table: StreamTable<string>, map: Map<number, string>): void {
  assert.equal(table.size, map.size);
  for (const [k, v] of map) assert.equal(table.get(k), v, `id ${k}`);
  assert.deepEqual(table.values().sort(), [...map.values()].sort());
  assert.deepEqual(table.entries().sort((a, b) => a[0] - b[0]), [...map.entries()].sort((a, b) => a[0] - b[0]));
}

describe('stream table', () => {
  it('holds what a Map holds under any sets, deletes and gets', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const table = new StreamTable<string>();
        const map = new Map<number, string>();
        ops.forEach(({ op, id }, n) => {
          if (op === 'set') {
            table.set(id, `v${n}`);
            map.set(id, `v${n}`);
          } else if (op === 'delete') assert.equal(table.delete(id), map.delete(id));
          else assert.equal(table.get(id), map.get(id));
        });
        check(table, map);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses stream 0 and ids past 2^31-1, and finds nothing under 0', () => {
    const table = new StreamTable<string>();
    table.set(1, 'a');
    assert.throws(() => table.set(0, 'x'), RangeError);
    assert.throws(() => table.set(2 ** 31, 'x'), RangeError);
    assert.equal(table.get(0), undefined);
    assert.equal(table.delete(0), false);
    assert.equal(table.size, 1);
    assert.equal(table.get(1), 'a');
  });

  it('streams opened and ended one after another, a few at once, as a connection\'s calls: always the ones in flight', () => {
    const table = new StreamTable<string>();
    const map = new Map<number, string>();
    let next = 1;
    const open: number[] = [];
    for (let n = 0; n < 20_000; n++) {
      // Up to 5 in flight; ends in any order.
      if (open.length < 5 && (n % 3 !== 0 || open.length === 0)) {
        table.set(next, `s${next}`);
        map.set(next, `s${next}`);
        open.push(next);
        next += 2;
      } else {
        const [gone] = open.splice((n * 7) % open.length, 1);
        assert.equal(table.delete(gone!), true);
        map.delete(gone!);
      }
      if (n % 997 === 0) check(table, map);
    }
    check(table, map);
    table.clear();
    assert.equal(table.size, 0);
    assert.equal(table.get(open[0]!), undefined);
  });
});
