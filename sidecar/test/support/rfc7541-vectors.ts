// RFC 7541 Appendix C.3 to C.6: three header blocks on one connection's
// dynamic table each, the fields they carry and the table after each block.
// The HPACK decoder and encoder tests both check against them.

export type Field = [name: string, value: string];

export interface Chain {
  /** The table's maximum size the chain runs at (SETTINGS_HEADER_TABLE_SIZE). */
  tableSize: number;
  /** Whether the appendix codes strings with Huffman. */
  huffman: boolean;
  blocks: string[];
  lists: Field[][];
  /** The dynamic table after each block, newest first. */
  tables: Field[][];
  sizes: number[];
}

const REQUEST_1: Field[] = [[':method', 'GET'], [':scheme', 'http'], [':path', '/'], [':authority', 'www.example.com']];
const REQUEST_2: Field[] = [...REQUEST_1, ['cache-control', 'no-cache']];
const REQUEST_3: Field[] = [[':method', 'GET'], [':scheme', 'https'], [':path', '/index.html'], [':authority', 'www.example.com'], ['custom-key', 'custom-value']];
const REQUEST_TABLES: Field[][] = [
  [[':authority', 'www.example.com']],
  [['cache-control', 'no-cache'], [':authority', 'www.example.com']],
  [['custom-key', 'custom-value'], ['cache-control', 'no-cache'], [':authority', 'www.example.com']],
];
const DATE_1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
const DATE_2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
const COOKIE = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';
const RESPONSE_1: Field[] = [[':status', '302'], ['cache-control', 'private'], ['date', DATE_1], ['location', 'https://www.example.com']];
const RESPONSE_2: Field[] = [[':status', '307'], ...RESPONSE_1.slice(1)];
const RESPONSE_3: Field[] = [[':status', '200'], ['cache-control', 'private'], ['date', DATE_2], ['location', 'https://www.example.com'], ['content-encoding', 'gzip'], ['set-cookie', COOKIE]];
const RESPONSE_TABLES: Field[][] = [
  [['location', 'https://www.example.com'], ['date', DATE_1], ['cache-control', 'private'], [':status', '302']],
  [[':status', '307'], ['location', 'https://www.example.com'], ['date', DATE_1], ['cache-control', 'private']],
  [['set-cookie', COOKIE], ['content-encoding', 'gzip'], ['date', DATE_2]],
];

export const CHAINS: Record<string, Chain> = {
  'C.3 requests without Huffman': {
    huffman: false,
    tableSize: 4096,
    blocks: ['8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d', '8286 84be 5808 6e6f 2d63 6163 6865', '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'],
    lists: [REQUEST_1, REQUEST_2, REQUEST_3],
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.4 requests with Huffman': {
    huffman: true,
    tableSize: 4096,
    blocks: ['8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'],
    lists: [REQUEST_1, REQUEST_2, REQUEST_3],
    tables: REQUEST_TABLES,
    sizes: [57, 110, 164],
  },
  'C.5 responses without Huffman, with eviction': {
    huffman: false,
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
    huffman: true,
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
