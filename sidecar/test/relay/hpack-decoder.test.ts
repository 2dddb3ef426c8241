// The shadow HPACK decoder against RFC 7541 Appendix C (C.2 to C.6: every
// representation, the dynamic table after each block, eviction, Huffman), and
// against malformed blocks, which must throw its error and nothing else.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HpackDecoder, HpackError } from '../../src/relay/hpack-decoder.ts';
import { encodeLiteralBlock } from '../../src/relay/frame-writer.ts';

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

const REQUEST_1: [string, string][] = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
const REQUEST_2: [string, string][] = [...REQUEST_1, ['cache-control', 'no-cache']];
const REQUEST_3: [string, string][] = [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']];
const REQUEST_TABLES: [string, string][][] = [
  [[':authority', 'www.example.com']],
  [['cache-control', 'no-cache'], [':authority', 'www.example.com']],
  [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']],
];
const DATE_1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE_2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const RESPONSE_1: [string, string][] = [[':status', '302'], ['cache-control', 'private'], ['date', DATE_1], ['location', 'https://www.example.com']];
const RESPONSE_2: [string, string][] = [[':status', '307'], ...RESPONSE_1.slice(1)];
const RESPONSE_3: [string, string][] = [[':status', '200'], ['cache-control', 'private'], ['date', DATE_2], ['location', 'https://www.example.com'], ['content-encoding', 'gzip'], ['set-cookie', COOKIE]];
const RESPONSE_TABLES: [string, string][][] = [
  [['location', 'https://www.example.com'], ['date', DATE_1], ['cache-control', 'private'], [':status', '302']],
  [[':status', '307'], ['location', 'https://www.example.com'], ['date', DATE_1], ['cache-control', 'private']],
  [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE_2]],
];

// Appendix C.3 to C.6: three blocks on one connection's table each.
const CHAINS: Record<string, { tableSize: number; blocks: string[]; lists: [string, string][][]; tables: [string, string][][]; sizes: number[] }> = {
  'C.3 requests without Huffman': {
    tableSize: 4096,
    blocks: ['8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', '8286 84be 5808 6e6f 2d63 6163 6865', '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'],
    lists: [REQUEST_1, REQUEST_2, REQUEST_3],
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.4 requests with Huffman': {
    tableSize: 4096,
    blocks: ['8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'],
    lists: [REQUEST_1, REQUEST_2, REQUEST_3],
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.5 responses without Huffman, with eviction': {
    tableSize: 256,
    blocks: [
      '4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '4803 3330 37c1 c0bf',
      '88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d 54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e 3d31',
    ],
    lists: [RESPONSE_1, RESPONSE_2, RESPONSE_3],
    tables: RESPONSE_TABLES,
    sizes: [222, 222, 215],
  },
  'C.6 responses with Huffman, with eviction': {
    tableSize: 256,
    blocks: [
      '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      '4883 640e ffc1 c0bf',
      '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
    ],
    lists: [RESPONSE_1, RESPONSE_2, RESPONSE_3],
    tables: RESPONSE_TABLES,
    sizes: [222, 222, 215],
  },
};

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
