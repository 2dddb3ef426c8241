// The shadow HPACK decoder against RFC 7541 Appendix C (C.2 to C.6: every
// representation, the dynamic table after each block, eviction, Huffman), and
// against malformed blocks, which must throw its error and nothing else.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HpackDecoder, HpackError } from '../../src/relay/hpack-decoder.ts';
import { HpackEncoder } from '../../src/relay/hpack-encoder.ts';
import { encodeLiteralBlock } from '../../src/relay/frame-writer.ts';
import { CHAINS } from '../support/rfc7541-vectors.ts';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const pairs = (flat: string[]): [string, string][] => {
  const out: [string, string][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
  return out;
};

// RFC 7541 Appendix C.2: one block per representation.
const C2: [string, string, [string, string], [string, string][]][] = [
  ['C.2.1 literal with indexing', '400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572', ['custom-key', 'custom-header'], [['custom-key', 'custom-header']]],
  ['C.2.2 literal without indexing', '040c 2f73 616d 706c 652f 7061 7468', [':path', '/sample/path'], []],
  ['C.2.3 literal never indexed', '1008 7061 7373 776f 7264 0673 6563 7265 74', ['password', 'secret'], []],
  ['C.2.4 indexed', '82', [':method', 'GET'], []],
];

describe('HPACK decoder: RFC 7541 Appendix C', () => {
  for (const [label, block, field, table] of C2) {
    it(label, () => {
      const d = new HpackDecoder();
      assert.deepEqual(pairs(d.decode(hex(block))), [field]);
      assert.deepEqual(d.entries(), table);
    });
  }
  for (const [label, chain] of Object.entries(CHAINS)) {
    it(label, () => {
      // The table's size is the decoding peer's SETTINGS_HEADER_TABLE_SIZE.
      const d = new HpackDecoder(chain.tableSize);
      chain.blocks.forEach((block, i) => {
        assert.deepEqual(pairs(d.decode(hex(block))), chain.lists[i], `block ${i + 1}`);
        assert.deepEqual(d.entries(), chain.tables[i], `table after block ${i + 1}`);
        assert.equal(d.tableSize, chain.sizes[i], `table size after block ${i + 1}`);
      });
    });
  }
});

function sizeUpdate(size: number): Buffer {
  // §6.3 with a 5-bit prefix (§5.1).
  if (size < 31) return Buffer.from([0x20 | size]);
  const bytes = [0x3f];
  let rest = size - 31;
  while (rest >= 128) {
    bytes.push((rest % 128) | 0x80);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

describe('HPACK decoder: table size updates', () => {
  it('evicts down to a smaller size and empties at 0', () => {
    const d = new HpackDecoder();
    d.decode(hex(CHAINS['C.3 requests without Huffman']!.blocks[0]!));
    assert.equal(d.tableSize, 57);
    assert.deepEqual(pairs(d.decode(hex('20 82'))), [[':method', 'GET']]);
    assert.equal(d.tableSize, 0);
    assert.throws(() => d.decode(hex('be')), HpackError);
  });

  it('refuses an update above the peer\'s setting, and one after a field', () => {
    assert.throws(() => new HpackDecoder(4096).decode(sizeUpdate(8192)), HpackError);
    assert.throws(() => new HpackDecoder().decode(hex('82 20')), HpackError);
    const d = new HpackDecoder(4096);
    d.setLimit(8192);
    d.decode(sizeUpdate(8192));
  });

  it('a literal the relay writes leaves the table untouched', () => {
    const d = new HpackDecoder();
    d.decode(hex(CHAINS['C.3 requests without Huffman']!.blocks[0]!));
    const block = encodeLiteralBlock([[':status', '200'], ['content-type', 'application/grpc'], ['grpc-status', '14'], ['grpc-message', 'upstream%20unavailable']]);
    assert.deepEqual(pairs(d.decode(block)), [[':status', '200'], ['content-type', 'application/grpc'], ['grpc-status', '14'], ['grpc-message', 'upstream%20unavailable']]);
    assert.deepEqual(d.entries(), [[':authority', 'www.example.com']]);
  });
});

describe('HPACK decoder: the header list cap', () => {
  it('stops adding fields past the cap, tells so, and keeps its table in step for the next block', () => {
    const d = new HpackDecoder(4096, 65_535);
    // A 4,000-octet field into the table (index 62), then 20 one-octet references to it: 20 × 4,037 octets decoded.
    const entry = encodeLiteralBlock([['x-big', 'a'.repeat(4000)]]);
    entry[0] = 0x40;
    assert.equal(d.decode(entry).length, 2);
    assert.equal(d.overflowed, false);
    const list = d.decode(Buffer.alloc(20, 0xbe));
    assert.equal(d.overflowed, true);
    assert.equal(d.listSize, 20 * (5 + 4000 + 32));
    assert.equal(list.length, 2 * Math.floor(65_535 / 4037), 'the fields that fit, no more');
    // A literal with indexing past the cap still enters the table: the next block refers to it.
    const late = Buffer.concat([Buffer.alloc(20, 0xbe), Buffer.from([0x40, 1, 0x79, 1, 0x7a])]);
    d.decode(late);
    assert.equal(d.overflowed, true);
    assert.deepEqual(pairs(d.decode(Buffer.from([0xbe]))), [['y', 'z']]);
    assert.equal(d.overflowed, false);
  });
});

describe('HPACK decoder: values sent again without indexing', () => {
  // As nghttp2 sends :path, content-length and etag: §6.2.2 under a static name, on every message.
  const without = (huffman: boolean): HpackEncoder => new HpackEncoder(4096, { huffman, indexing: () => 'without' });
  const block = (huffman: boolean, fields: string[]): Buffer => without(huffman).encode(fields);

  it('reads each block\'s own value: a repeat, another of the same length, the same value raw, then the first again', () => {
    const d = new HpackDecoder();
    const first = [':path', '/pkg.Svc/Unary', 'content-length', '261', 'etag', '"105-1"'];
    const other = [':path', '/pkg.Svc/Other', 'content-length', '262', 'etag', '"105-2"'];
    assert.deepEqual(d.decode(block(true, first)), first);
    assert.deepEqual(d.decode(block(true, first)), first);
    assert.deepEqual(d.decode(block(true, other)), other);
    assert.deepEqual(d.decode(block(false, first)), first);
    assert.deepEqual(d.decode(block(true, first)), first);
    assert.deepEqual(d.entries(), [], 'nothing entered the table');
  });

  it('keeps a never-indexed field so, and a repeat after a malformed block still decodes', () => {
    const d = new HpackDecoder();
    const fields = [':path', '/a', 'authorization', 'Bearer x'];
    const wire = new HpackEncoder(4096).encode(fields);
    assert.deepEqual(d.decode(wire), fields);
    assert.deepEqual(d.neverIndexed, [1]);
    assert.deepEqual(d.decode(wire), fields);
    assert.deepEqual(d.neverIndexed, [1]);
    assert.throws(() => d.decode(hex('0485 ffff')), HpackError);
    assert.deepEqual(d.decode(block(true, [':path', '/a'])), [':path', '/a']);
  });

  it('keeps at most 512 octets to compare with, however many names a peer fills, and decodes past that', () => {
    const d = new HpackDecoder();
    const long = (n: number): string => String(n).padStart(120, 'v');
    for (let round = 0; round < 2; round++) {
      for (let index = 1; index <= 61; index++) {
        const fields = [staticName(index), long(index + round)];
        assert.deepEqual(d.decode(block(false, fields)), fields);
      }
      assert.ok(d.keptOctets <= 512, `${d.keptOctets} octets kept`);
      assert.ok(d.keptOctets > 0);
    }
  });
});

describe('HPACK decoder: blocks sent again', () => {
  // 0x82 :method GET, 0xbe the newest dynamic entry (index 62).
  const readsNewest = Buffer.from([0x82, 0xbe]);
  const insert = (value: string): Buffer => Buffer.from([0x40, 5, ...Buffer.from('x-tag'), value.length, ...Buffer.from(value)]);

  it('reads the same octets against the table as it stands: after an insertion, the new entry; after a size update to 0, none', () => {
    const d = new HpackDecoder();
    d.decode(insert('one'));
    assert.deepEqual(d.decode(readsNewest), [':method', 'GET', 'x-tag', 'one']);
    assert.deepEqual(d.decode(readsNewest), [':method', 'GET', 'x-tag', 'one']);
    d.decode(insert('two'));
    assert.deepEqual(d.decode(readsNewest), [':method', 'GET', 'x-tag', 'two']);
    d.decode(Buffer.from([0x20]));
    assert.throws(() => d.decode(readsNewest), /index 62 beyond the dynamic table/);
  });

  it('numbers a block kept while it repeats, and never gives its number to another block', () => {
    const d = new HpackDecoder();
    d.decode(insert('one'));
    assert.equal(d.repeat, 0, 'a block that changed the table is not kept');
    d.decode(readsNewest);
    const first = d.repeat;
    assert.ok(first > 0);
    d.decode(Buffer.from([0x83]));
    const other = d.repeat;
    assert.ok(other > 0 && other !== first);
    d.decode(readsNewest);
    assert.equal(d.repeat, first, 'a repeat of the block has its number');
    d.decode(insert('two'));
    d.decode(readsNewest);
    assert.ok(d.repeat !== first && d.repeat !== other, 'the same octets against a changed table are another block');
    assert.deepEqual(d.decode(readsNewest), [':method', 'GET', 'x-tag', 'two']);
  });

  it('gives a repeat its own list size and cut: an answer\'s headers and trailers taking turns, one past the cap', () => {
    const d = new HpackDecoder(4096, 100);
    d.decode(insert('v'.repeat(60)));
    const headers = Buffer.from([0x88, 0xbe]); // :status 200 (42 octets), x-tag (97): past 100
    const trailers = Buffer.from([0x88]);
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(d.decode(headers), [':status', '200']);
      assert.equal(d.overflowed, true);
      assert.equal(d.listSize, 42 + 97);
      assert.deepEqual(d.decode(trailers), [':status', '200']);
      assert.equal(d.overflowed, false);
      assert.equal(d.listSize, 42);
    }
  });
});

/** The name of static table entry `index` (RFC 7541 Appendix A), read back through the decoder. */
function staticName(index: number): string {
  return new HpackDecoder().decode(Buffer.from([0x80 | index]))[0]!;
}

describe('HPACK decoder: malformed blocks', () => {
  const cases: [string, string][] = [
    ['index 0', '80'],
    ['an index past the dynamic table', 'be'],
    ['a literal name index past the dynamic table', '7f00 0161'],
    ['a string running past the block', '400a 6375'],
    ['a literal cut before its name', '40'],
    ['a literal cut before its value', '41'],
    ['an integer running past the block', 'ff'],
    ['an integer with too many continuation bytes', 'ff ff ff ff ff ff 01'],
    ['a Huffman string with EOS inside', '0084 ffff ffff 00'],
    ['a Huffman string padded past 7 bits', '0083 ffff ff 00'],
    ['a Huffman string padded with zeros', '4081 00 00'],
    ['a Huffman string padded with a full byte of ones', '4082 1fff 00'],
    ['a literal without indexing cut before its value', '04'],
    ['a literal without indexing whose value runs past the block', '0485 ffff'],
  ];
  for (const [label, block] of cases) {
    it(`throws HpackError on ${label}`, () => {
      assert.throws(() => new HpackDecoder().decode(hex(block)), HpackError);
    });
  }

  it('survives random bytes: an HpackError or headers, never another exception', () => {
    let seed = 7;
    const rand = (): number => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 0x1000000;
    for (let n = 0; n < 5000; n++) {
      const block = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 40) }, () => Math.floor(rand() * 256)));
      const d = new HpackDecoder();
      try {
        d.decode(block);
      } catch (err) {
        assert.ok(err instanceof HpackError, `${block.toString('hex')}: ${String(err)}`);
      }
    }
  });
});
