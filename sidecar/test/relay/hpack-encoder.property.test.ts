// Properties of the proxy's HPACK encoder: whatever header lists it is given,
// block after block on one connection (repeated names, secrets, values larger
// than the table, the peer's table resized down to 0 and back between blocks),
// the relay's own decoder reads back exactly the list, with the fields asked
// never indexed so, and ends with the same dynamic table the encoder keeps.
// Its Huffman coding decodes back to the string, in the length it announced.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { HpackDecoder } from '../../src/relay/hpack-decoder.ts';
import { HpackEncoder } from '../../src/relay/hpack-encoder.ts';
import { huffmanDecode, huffmanEncode, huffmanLength } from '../../src/relay/hpack-huffman.ts';

const latin1 = (maxLength: number): fc.Arbitrary<string> => fc.string({ maxLength, unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)) });

/** Names the policy treats apart, common ones, and made-up ones (few, so that they repeat). */
const name = fc.oneof(
  fc.constantFrom(':method', ':path', ':authority', 'authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'grpc-timeout', 'grpc-status', 'traceparent', 'user-agent', 'content-type', 'date', 'location'),
  fc.constantFrom('x-a', 'x-b', 'x-c'),
  fc.string({ minLength: 1, maxLength: 12, unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz-0123456789') }),
);
/** Values from a small set (so that whole fields repeat), random octets, and some past a quarter of the table. */
const value = fc.oneof({ weight: 3, arbitrary: fc.constantFrom('', 'GET', '/', '0', 'application/grpc', '/pkg.Service/Method', 'Bearer t') }, { weight: 3, arbitrary: latin1(40) }, { weight: 1, arbitrary: latin1(1500) });

interface Block {
  fields: [string, string][];
  /** Which fields to send never indexed, by a bit per field. */
  never: boolean[];
  /** The peer's SETTINGS_HEADER_TABLE_SIZE changes before the block (applied in order). */
  resizes: readonly number[];
}

const block: fc.Arbitrary<Block> = fc.record({
  fields: fc.array(fc.tuple(name, value), { maxLength: 14 }),
  never: fc.array(fc.boolean(), { minLength: 14, maxLength: 14 }),
  resizes: fc.oneof({ weight: 4, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.constantFrom(0, 64, 256, 1000, 4096, 8192), { minLength: 1, maxLength: 3 }) }),
});

describe('HpackEncoder properties', () => {
  it('the decoder reads every block as given, never-indexed fields so, and keeps the encoder\'s table, across blocks and resizes', () => {
    fc.assert(
      fc.property(fc.array(block, { minLength: 1, maxLength: 12 }), (blocks) => {
        const encoder = new HpackEncoder();
        // The decoder's limit is the peer's own setting; the encoder never goes past 4,096 (its limit).
        const decoder = new HpackDecoder();
        for (const b of blocks) {
          for (const size of b.resizes) {
            decoder.setLimit(size);
            encoder.setMaxTableSize(size);
          }
          const list = b.fields.flat();
          const never = b.fields.map((_, i) => i).filter((i) => b.never[i]);
          const decoded = [...decoder.decode(encoder.encode(list, never))];
          assert.deepEqual(decoded, list);
          // Never indexed: what was asked, and the secrets the policy adds.
          const secret = (i: number): boolean => ['authorization', 'proxy-authorization'].includes(b.fields[i]![0]) || (b.fields[i]![0] === 'cookie' && b.fields[i]![1].length < 20);
          assert.deepEqual(decoder.neverIndexed, b.fields.map((_, i) => i).filter((i) => b.never[i] || secret(i)));
          assert.deepEqual(decoder.entries(), encoder.entries());
          assert.equal(decoder.tableSize, encoder.tableSize);
          assert.ok(encoder.tableSize <= encoder.maxTableSize);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('lists that come again at the same positions, as a connection\'s calls do, read back as given across evictions and resizes', () => {
    // The encoder remembers where each position's field was last found whole; a
    // few lists drawn again and again, with new fields and resizes in between,
    // evict those entries under it.
    const few = fc.array(fc.tuple(name, value), { minLength: 1, maxLength: 8 });
    fc.assert(
      fc.property(fc.array(few, { minLength: 1, maxLength: 3 }), fc.array(fc.tuple(fc.nat(), block), { minLength: 1, maxLength: 20 }), (lists, steps) => {
        const encoder = new HpackEncoder();
        const decoder = new HpackDecoder();
        for (const [pick, other] of steps) {
          // Every other step one of the few lists, else a random block (after its resizes).
          const fields = pick % 2 === 0 ? lists[(pick >> 1) % lists.length]! : other.fields;
          if (pick % 2 === 1)
            for (const size of other.resizes) {
              decoder.setLimit(size);
              encoder.setMaxTableSize(size);
            }
          const list = fields.flat();
          assert.deepEqual([...decoder.decode(encoder.encode(list))], list);
          assert.deepEqual(decoder.entries(), encoder.entries());
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a list sent again right away costs no more than the first time, and one octet a field when all fit the table', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom('x-a', 'x-b', 'user-agent', ':authority'), latin1(30)), { maxLength: 10 }), (fields) => {
        const encoder = new HpackEncoder();
        const list = fields.flat();
        const first = encoder.encode(list);
        const second = encoder.encode(list);
        assert.ok(second.length <= first.length);
        // Each field is at most 30 + 10 + 32 octets in the table: ten fit 4,096 with room to spare.
        assert.equal(second.length, fields.length);
      }),
    );
  });

  it('Huffman codes any octets into the length it announces, and decodes back', () => {
    fc.assert(
      fc.property(latin1(300), (s) => {
        const out = Buffer.alloc(huffmanLength(s) + 4);
        const end = huffmanEncode(out, 0, s);
        assert.equal(end, huffmanLength(s));
        assert.equal(huffmanDecode(out, 0, end), s);
      }),
      { numRuns: 500 },
    );
  });
});
