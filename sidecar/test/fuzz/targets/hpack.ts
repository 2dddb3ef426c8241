// Fuzz target: the relay's HPACK decoder (src/relay/hpack-decoder.ts), and the
// tableless encoder translate mode writes blocks anew with
// (src/relay/hpack-literal-encoder.ts).
//
// Input: [options] then header blocks, each [length] [block…] (the last one
// takes what is left), decoded in order by one decoder as one connection's.
// Options: bits 0–1 the table size limit, bits 2–3 the header list cap, bit 4
// a traceparent injected when blocks are written anew.
//
// Findings: an exception other than HpackError; a list past its cap, or of
// anything but latin1 strings; a dynamic table over its limit or whose size is
// not its entries' (RFC 7541 §4.1); a block written anew that a second decoder,
// which sees only written blocks (the upstream), reads differently or that
// touches its dynamic table.
import assert from 'node:assert/strict';
import type { FuzzTarget } from '../engine.ts';
import { HpackDecoder, HpackError } from '../../../src/relay/hpack-decoder.ts';
import { encodeTableless, leadingSizeUpdates } from '../../../src/relay/hpack-literal-encoder.ts';

const LIMITS = [4096, 0, 256, 65536];
const LIST_CAPS = [Infinity, 0, 100, 4096];
const INJECT: [string, string] = ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'];

/** §4.1 sizes: each field's name and value octets plus 32. */
function listSize(list: readonly string[]): number {
  let n = 0;
  for (let i = 0; i < list.length; i += 2) n += list[i]!.length + list[i + 1]!.length + 32;
  return n;
}

function* blocks(data: Buffer): Generator<Buffer> {
  for (let i = 1; i < data.length; ) {
    const end = Math.min(data.length, i + 1 + data[i]!);
    yield data.subarray(i + 1, end);
    i = end;
  }
}

export const target: FuzzTarget = {
  maxLength: 1024,
  run(data) {
    if (data.length === 0) return;
    const limit = LIMITS[data[0]! & 3]!;
    const cap = LIST_CAPS[(data[0]! >> 2) & 3]!;
    const inject = data[0]! & 0x10 ? INJECT : undefined;
    const decoder = new HpackDecoder(limit, cap);
    const upstream = new HpackDecoder(limit);
    for (const block of blocks(data)) {
      let list: string[];
      try {
        list = [...decoder.decode(block)];
      } catch (err) {
        // COMPRESSION_ERROR ends the connection, and with it the table.
        if (err instanceof HpackError) return;
        throw err;
      }
      assert.equal(list.length % 2, 0);
      for (const s of list) assert.ok(!/[\u0100-\uffff]/.test(s), `not latin1: ${JSON.stringify(s)}`);
      assert.ok(listSize(list) <= cap, `a list of ${listSize(list)} past the cap of ${cap}`);
      const entries = decoder.entries();
      assert.equal(decoder.tableSize, listSize(entries.flat()), 'the table size is not its entries');
      assert.ok(decoder.tableSize <= limit, `a table of ${decoder.tableSize} over the limit of ${limit}`);
      // A cut list is never written anew (and its never-indexed positions past the cut mean nothing).
      if (decoder.overflowed) continue;
      const never = [...decoder.neverIndexed];
      for (let i = 0; i < never.length; i++) assert.ok(never[i]! < list.length / 2 && (i === 0 || never[i - 1]! < never[i]!), `never-indexed positions ${never.join(',')}`);
      const written = encodeTableless(block.subarray(0, leadingSizeUpdates(block)), list, never, inject);
      const read = [...upstream.decode(written)];
      if (inject) {
        const kept: string[] = [];
        for (let i = 0; i < list.length; i += 2) if (list[i] !== inject[0]) kept.push(list[i]!, list[i + 1]!);
        assert.deepEqual(read, [...kept, ...inject], 'the block written anew reads differently');
      } else {
        assert.deepEqual(read, list, 'the block written anew reads differently');
        assert.deepEqual(upstream.neverIndexed, never, 'never-indexed fields lost in the block written anew');
      }
      assert.equal(upstream.entries().length, 0, 'the block written anew changed the dynamic table');
    }
  },
  seeds: [
    // RFC 7541 C.3 (requests), C.4 (the same, Huffman), C.5 and C.6 (responses, a 256-octet table, evictions).
    '00 14 828684410f7777772e6578616d706c652e636f6d 0e 828684be58086e6f2d6361636865 1d 828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565',
    '00 11 828684418cf1e3c2e5f23a6ba0ab90f4ff 0c 828684be5886a8eb10649cbf 18 828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf',
    '02 46 4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d 08 4803333037c1c0bf 62 88c1611d4d6f6e2c203231204f637420323031332032303a31333a323220474d54c05a04677a69707738666f6f3d4153444a4b48514b425a584f5157454f50495541585157454f49553b206d61782d6167653d333630303b2076657273696f6e3d31',
    '12 36 488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3 08 4883640effc1c0bf 51 88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007',
    // A table size update to 0 then back, a never-indexed field, a list cap of 100.
    '08 0c 203fe11f 10 0161 0162 8286',
  ].map((s) => Buffer.from(s.replace(/ /g, ''), 'hex')),
  dictionary: [
    ...['82', '84', '86', '87', 'be', 'bf', 'ff80', '40', '00', '10', '0f', '20', '3fe11f', '3f00', '7f00', '80', 'ff0f'].map((h) => Buffer.from(h, 'hex')),
    // Huffman "www.example.com", "no-cache".
    Buffer.from('8cf1e3c2e5f23a6ba0ab90f4ff', 'hex'),
    Buffer.from('86a8eb10649cbf', 'hex'),
    ...['content-type', 'te', 'trailers', 'grpc-timeout', 'traceparent', 'cookie', 'application/grpc'].map((s) => Buffer.concat([Buffer.from([s.length]), Buffer.from(s, 'latin1')])),
  ],
};
