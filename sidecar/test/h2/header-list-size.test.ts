// RFC 9113 §6.5.2: a header list's size is the sum of its fields' name and value lengths plus 32 each.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_HEADER_LIST_PAIRS, MAX_HEADER_LIST_SIZE, headerListSize } from '../../src/h2/header-list-size.ts';

describe('headerListSize', () => {
  it('counts name, value and 32 per field, repeated fields each', () => {
    const raw = [':method', 'GET', ':path', '/a', 'x-k', 'v1', 'x-k', 'v2'];
    assert.equal(headerListSize({}, raw), 7 + 3 + 5 + 2 + 3 + 2 + 3 + 2 + 4 * 32);
  });

  it('gives the same size from the headers object when raw fields are not given', () => {
    assert.equal(headerListSize({ ':method': 'GET', ':path': '/a', 'x-k': ['v1', 'v2'] }, undefined), headerListSize({}, [':method', 'GET', ':path', '/a', 'x-k', 'v1', 'x-k', 'v2']));
  });

  it('puts Node\'s cap on fields above any list within the size, so the size decides', () => {
    assert.ok(MAX_HEADER_LIST_PAIRS * 32 > MAX_HEADER_LIST_SIZE);
    // HEADERS and 8 CONTINUATIONs of 16384 octets, one octet a field: no block nghttp2 takes holds more.
    assert.ok(MAX_HEADER_LIST_PAIRS >= 9 * 16_384);
  });
});
