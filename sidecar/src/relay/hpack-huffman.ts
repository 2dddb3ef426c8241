// The HPACK Huffman code (RFC 7541 §5.2, Appendix B), decoded four bits at a
// time through a state table built once at load: each step is one array read,
// with no per-bit branching and no tree walk.
//
// The code is canonical (codes are handed out in order of length, then of
// symbol), so the bit lengths below are the whole of Appendix B: the codes are
// rebuilt from them, and the Appendix C vectors check the result. The encoder
// (huffmanLength, huffmanEncode) writes with the same rebuilt codes.

/** Bit length of the code of each symbol 0–255 and of EOS (256), from RFC 7541 Appendix B. */
// prettier-ignore
const CODE_LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0x00
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 0x10
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, //          ' ' .. '/'
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, //               '0' .. '?'
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, //                 '@' .. 'O'
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, //              'P' .. '_'
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, //                 '`' .. 'o'
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, //             'p' .. 0x7f
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 0x80
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 0x90
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 0xa0
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 0xb0
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 0xc0
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 0xd0
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 0xe0
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 0xf0
  30, //                                                               EOS
];

const EOS = 256;

/** Each symbol's code, right-aligned, rebuilt from the lengths (canonical Huffman). */
export function huffmanCodes(): { codes: number[]; lengths: readonly number[] } {
  const order = CODE_LENGTHS.map((len, sym) => ({ len, sym })).sort((a, b) => a.len - b.len || a.sym - b.sym);
  const codes: number[] = new Array(CODE_LENGTHS.length);
  let code = 0;
  let len = order[0]!.len;
  for (const e of order) {
    code *= 2 ** (e.len - len);
    len = e.len;
    codes[e.sym] = code;
    code++;
  }
  return { codes, lengths: CODE_LENGTHS };
}

// A state is an internal node of the code tree (256 of them for 257 leaves); a
// transition reads four bits. No code is shorter than five bits, so four bits
// complete at most one symbol. Entry layout: next state in bits 0–7, symbol in
// bits 8–15, EMITS and FAILS flags above.
const EMITS = 1 << 16;
const FAILS = 1 << 17;
const transitions = new Int32Array(256 * 16);
/** Whether ending in this state is valid padding: at most 7 bits, all ones, the prefix of EOS (§5.2). */
const acceptable = new Uint8Array(256);

function buildTable(): void {
  const { codes } = huffmanCodes();
  // The tree as child arrays: a value < 0 is a leaf holding symbol ~value.
  const left: number[] = [0];
  const right: number[] = [0];
  const depth: number[] = [0];
  const allOnes: boolean[] = [true];
  for (let sym = 0; sym < CODE_LENGTHS.length; sym++) {
    const len = CODE_LENGTHS[sym]!;
    let node = 0;
    for (let b = len - 1; b >= 0; b--) {
      const bit = Math.floor(codes[sym]! / 2 ** b) % 2;
      const side = bit ? right : left;
      if (b === 0) {
        side[node] = ~sym;
        break;
      }
      if (side[node] === 0) {
        side[node] = left.length;
        left.push(0);
        right.push(0);
        depth.push(depth[node]! + 1);
        allOnes.push(allOnes[node]! && bit === 1);
      }
      node = side[node]!;
    }
  }
  for (let s = 0; s < left.length; s++) acceptable[s] = allOnes[s]! && depth[s]! <= 7 ? 1 : 0;
  for (let s = 0; s < left.length; s++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = s;
      let entry = 0;
      for (let b = 3; b >= 0; b--) {
        const child = (nibble >> b) & 1 ? right[node]! : left[node]!;
        if (child < 0) {
          const sym = ~child;
          if (sym === EOS) {
            entry = FAILS;
            break;
          }
          entry = EMITS | (sym << 8);
          node = 0;
        } else node = child;
      }
      transitions[s * 16 + nibble] = entry & FAILS ? FAILS : entry | node;
    }
  }
}
buildTable();

/** Scratch for decoded octets; a string literal never decodes to more than 8/5 of its length. */
let scratch = Buffer.allocUnsafe(4096);

/**
 * Decodes `src[start, end)` to a latin1 string (one char per octet, so its
 * length is its size in octets, as the dynamic table counts it). Returns
 * undefined on an invalid code: EOS inside the string, or padding that is
 * longer than 7 bits or not all ones (RFC 7541 §5.2).
 */
export function huffmanDecode(src: Uint8Array, start: number, end: number): string | undefined {
  const need = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < need) scratch = Buffer.allocUnsafe(need * 2);
  const out = scratch;
  let n = 0;
  let state = 0;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    let t = transitions[state * 16 + (byte >> 4)]!;
    if (t & FAILS) return undefined;
    if (t & EMITS) out[n++] = (t >> 8) & 0xff;
    state = t & 0xff;
    t = transitions[state * 16 + (byte & 0xf)]!;
    if (t & FAILS) return undefined;
    if (t & EMITS) out[n++] = (t >> 8) & 0xff;
    state = t & 0xff;
  }
  if (!acceptable[state]) return undefined;
  return latin1(out, 0, n);
}

/** Longest string built in JS: short strings (most header values) build faster so than through a native call. */
const SHORT = 32;
/** An array of each length up to SHORT, reused: the string is built in one allocation, where adding a character at a time allocates a string per character. */
const CODES: number[][] = Array.from({ length: SHORT + 1 }, (_, n) => new Array<number>(n).fill(0));

/** `bytes[start, start + n)` as a latin1 string (one char per octet). */
export function latin1(bytes: Uint8Array, start: number, n: number): string {
  if (n > SHORT) return Buffer.from(bytes.buffer, bytes.byteOffset + start, n).toString('latin1');
  const codes = CODES[n]!;
  for (let k = 0; k < n; k++) codes[k] = bytes[start + k]!;
  return String.fromCharCode.apply(null, codes);
}

// Encoding: each symbol's code and length, rebuilt once from CODE_LENGTHS.
const ENCODE = huffmanCodes();
const CODE = Uint32Array.from(ENCODE.codes);
const LENGTH = Uint8Array.from(ENCODE.lengths);

/** The octets `s` (latin1) takes Huffman coded, padding included (§5.2). */
export function huffmanLength(s: string): number {
  let bits = 0;
  for (let k = 0; k < s.length; k++) bits += LENGTH[s.charCodeAt(k) & 0xff]!;
  return (bits + 7) >>> 3;
}

/**
 * Writes `s` (latin1) Huffman coded at `out[at]`, padded with the high bits of
 * EOS (all ones, §5.2); returns the end. The caller has room for huffmanLength(s).
 */
export function huffmanEncode(out: Uint8Array, at: number, s: string): number {
  // `acc` holds `n` pending bits, n < 8 between symbols; codes of up to 24 bits
  // join it in one step (at most 31 bits, within the int32 bit operations), longer
  // ones (only octets 0x00–0x1f, 0x7f–0xff) in two.
  let acc = 0;
  let n = 0;
  for (let k = 0; k < s.length; k++) {
    const sym = s.charCodeAt(k) & 0xff;
    const code = CODE[sym]!;
    const len = LENGTH[sym]!;
    if (len > 24) {
      acc = (acc << (len - 16)) | (code >>> 16);
      n += len - 16;
      while (n >= 8) out[at++] = (acc >>> (n -= 8)) & 0xff;
      acc &= (1 << n) - 1;
      acc = (acc << 16) | (code & 0xffff);
      n += 16;
    } else {
      acc = (acc << len) | code;
      n += len;
    }
    while (n >= 8) out[at++] = (acc >>> (n -= 8)) & 0xff;
    acc &= (1 << n) - 1;
  }
  if (n > 0) out[at++] = ((acc << (8 - n)) | (0xff >>> n)) & 0xff;
  return at;
}
