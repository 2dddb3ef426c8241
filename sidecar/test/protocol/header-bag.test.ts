// The relays' headers object: node:http's shape, and a field named like an
// Object.prototype member is a field like any other.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addField, emptyHeaderBag } from '../../src/protocol/header-bag.ts';

describe('header bag', () => {
  it('lists a repeated name\'s values in order, and keeps the others as strings', () => {
    const bag = emptyHeaderBag();
    for (const [name, value] of [['a', '1'], ['b', '2'], ['a', '3'], ['a', '4']] as const) addField(bag, name, value);
    assert.deepEqual({ ...bag }, { a: ['1', '3', '4'], b: '2' });
    assert.deepEqual(Object.keys(bag), ['a', 'b']);
  });

  it('inherits nothing: `constructor`, `__proto__` and `toString` are fields, absent until sent', () => {
    const empty = emptyHeaderBag();
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) assert.equal(empty[name], undefined, name);
    const bag = emptyHeaderBag();
    addField(bag, 'constructor', 'x');
    addField(bag, '__proto__', 'y');
    addField(bag, '__proto__', 'z');
    addField(bag, 'toString', 'w');
    assert.deepEqual(Object.keys(bag), ['constructor', '__proto__', 'toString']);
    assert.equal(bag.constructor, 'x');
    assert.deepEqual(bag['__proto__'], ['y', 'z']);
    assert.equal(JSON.stringify(bag), '{"constructor":"x","__proto__":["y","z"],"toString":"w"}');
    // Another bag is untouched: nothing was written to a shared prototype.
    assert.equal(emptyHeaderBag()['constructor'], undefined);
  });
});
