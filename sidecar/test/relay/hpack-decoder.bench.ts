// How long the shadow decoder takes per header block: a gRPC request and its
// response headers and trailers as grpc-js encodes them (Huffman literals, then
// dynamic-table hits on the next calls of the connection).
//   node --import tsx sidecar/test/relay/hpack-decoder.bench.ts
import { HpackDecoder } from '../../src/relay/hpack-decoder.ts';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
// RFC 7541 C.4 and C.6: Huffman-coded first blocks, then indexed repeats.
const requests = ['8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff', '8286 84be 5886 a8eb 1064 9cbf', '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'].map(hex);
const responses = [
  '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
  '4883 640e ffc1 c0bf',
  '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed 4ee5 b106 3d50 07',
].map(hex);

function run(label: string, blocks: Buffer[], tableSize: number): void {
  const rounds = 200_000;
  // A fresh table for each run of three blocks, as the vectors expect (its making is timed too).
  const t0 = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) {
    const d = new HpackDecoder(tableSize);
    for (const b of blocks) d.decode(b);
  }
  const ns = Number(process.hrtime.bigint() - t0) / (rounds * blocks.length);
  process.stdout.write(`${label}: ${(ns / 1000).toFixed(3)} µs per block\n`);
}

run('requests (C.4, Huffman)', requests, 4096);
run('responses (C.6, Huffman, eviction)', responses, 256);
