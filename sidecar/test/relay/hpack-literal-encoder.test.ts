// Translate mode's header blocks: written anew from what a shadow decoder read,
// they must decode to the same fields on a decoder whose table they never touch
// (RFC 7541 Appendix C's request chains, which lean on the dynamic table), keep
// never-indexed fields so (§6.2.3), carry the client's table size updates, and
// put the injected field in place of the caller's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HpackDecoder } from '../../src/relay/hpack-decoder.ts';
import { encodeTableless, leadingSizeUpdates } from '../../src/relay/hpack-literal-encoder.ts';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const NONE = Buffer.alloc(0);

// RFC 7541 C.3 and C.4: three requests on one table (indexed and incrementally indexed fields).
const CHAINS = [
  ['8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', '8286 84be 5808 6e6f 2d63 6163 6865', '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'],
  ['8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'],
];

describe('encodeTableless', () => {
  for (const [n, chain] of CHAINS.entries()) {
    it(`re-encodes the RFC 7541 C.${n + 3} requests to the same fields, leaving the reader's table empty`, () => {
      const client = new HpackDecoder();
      const upstream = new HpackDecoder();
      for (const block of chain) {
        const list = [...client.decode(hex(block))];
        const again = encodeTableless(NONE, list, client.neverIndexed);
        assert.deepEqual([...upstream.decode(again)], list);
        assert.equal(upstream.tableSize, 0);
      }
      assert.ok(client.tableSize > 0, 'the client side used its table');
    });
  }

  it('uses static indices where the static table holds the whole field or its name', () => {
    assert.deepEqual(encodeTableless(NONE, [':method', 'GET', ':path', '/'], []), hex('8284'));
    // :path is static index 4: literal without indexing, indexed name, then the raw value.
    assert.deepEqual(encodeTableless(NONE, [':path', '/a'], []), hex('04 02 2f61'));
    assert.deepEqual(encodeTableless(NONE, ['x-a', 'b'], []), hex('00 03 782d61 01 62'));
  });

  it('keeps a never-indexed field never indexed (RFC 7541 C.2.3), also among others', () => {
    const client = new HpackDecoder();
    const list = [...client.decode(hex('82 1008 7061 7373 776f 7264 0673 6563 7265 74 84'))];
    assert.deepEqual(client.neverIndexed, [1]);
    const again = encodeTableless(NONE, list, client.neverIndexed);
    assert.deepEqual(again, hex('82 1008 7061 7373 776f 7264 0673 6563 7265 74 84'));
    const upstream = new HpackDecoder();
    assert.deepEqual([...upstream.decode(again)], list);
    assert.deepEqual(upstream.neverIndexed, [1]);
  });

  it('puts the injected field in place of every field of its name, or appends it', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const decode = (b: Buffer): string[] => [...new HpackDecoder().decode(b)];
    assert.deepEqual(decode(encodeTableless(NONE, [':method', 'POST', 'traceparent', 'old', 'te', 'trailers'], [], ['traceparent', tp])), [':method', 'POST', 'te', 'trailers', 'traceparent', tp]);
    assert.deepEqual(decode(encodeTableless(NONE, [':method', 'POST'], [], ['traceparent', tp])), [':method', 'POST', 'traceparent', tp]);
  });

  it("starts with the client's dynamic table size updates, which the reader must see (RFC 7541 §4.2)", () => {
    // Size 0, then 4096 (a 5-bit prefix integer over two more octets), then :method GET.
    const block = hex('20 3fe11f 82');
    assert.equal(leadingSizeUpdates(block), 4);
    assert.equal(leadingSizeUpdates(hex('82')), 0);
    const again = encodeTableless(block.subarray(0, leadingSizeUpdates(block)), [':method', 'GET'], []);
    assert.deepEqual(again, block);
  });
});
