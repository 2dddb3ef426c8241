// Header blocks written anew for translate mode (a traceparent to inject): the
// decoded fields encoded so that the decoder's dynamic table never changes
// (RFC 7541), so the relay need not follow a table it would have to share with
// the upstream. Only these representations are used:
//
//   field                                  representation (RFC 7541)
//   name and value in the static table     §6.1 indexed, static index (Appendix A)
//   name in the static table               §6.2.2 literal without indexing, indexed name
//   anything else                          §6.2.2 literal without indexing, literal name
//   sent never indexed by the client       §6.2.3 literal never indexed (kept so, §6.2.3)
//   dynamic table size updates             §6.3, copied from the start of the client's block
//
// Strings go without Huffman coding: a larger block, less CPU. Names and values
// are latin1 (one char per octet), as the decoder gives them.
import { STATIC_FIELD_INDEX, STATIC_NAME_INDEX } from './hpack-static-table.ts';

/** The length of the dynamic table size updates (§6.3) a block starts with; 0 if none. */
export function leadingSizeUpdates(block: Uint8Array): number {
  let i = 0;
  while (i < block.length && (block[i]! & 0xe0) === 0x20) {
    // A 5-bit prefix integer: its continuation octets have the high bit set.
    if ((block[i++]! & 0x1f) === 0x1f) while (i < block.length && block[i++]! & 0x80);
  }
  return i;
}

/** §5.1 integer with an N-bit prefix whose other bits are `high`, at `at`; returns the end. */
export function putInt(out: Buffer, at: number, value: number, prefix: number, high: number): number {
  const max = (1 << prefix) - 1;
  if (value < max) {
    out[at] = high | value;
    return at + 1;
  }
  out[at++] = high | max;
  value -= max;
  while (value >= 128) {
    out[at++] = (value & 0x7f) | 0x80;
    value >>>= 7;
  }
  out[at] = value;
  return at + 1;
}

/** §5.2 string literal, raw octets (no Huffman), at `at`; returns the end. */
export function putString(out: Buffer, at: number, s: string): number {
  const n = s.length;
  at = putInt(out, at, n, 7, 0);
  // Short strings (most header fields) are cheaper copied here than through Buffer.write's binding.
  if (n > 64) return at + out.write(s, at, 'latin1');
  for (let k = 0; k < n; k++) out[at + k] = s.charCodeAt(k);
  return at + n;
}

/**
 * Encodes `list` (name, value, name, value…) after the size updates `prefix`,
 * with `inject` in place of every field of its name (appended when absent).
 * `neverIndexed` holds the positions of the fields to keep never indexed.
 */
export function encodeTableless(prefix: Uint8Array, list: readonly string[], neverIndexed: readonly number[], inject?: readonly [name: string, value: string]): Buffer {
  // Each field costs at most its octets plus three integers of up to 5 octets (strings under 2^28).
  let room = prefix.length + 15 + (inject ? inject[0].length + inject[1].length : 0);
  for (let i = 0; i < list.length; i++) room += list[i]!.length + (i & 1 ? 5 : 10);
  const out = Buffer.allocUnsafe(room);
  out.set(prefix, 0);
  let at = prefix.length;
  let sensitive = 0;
  for (let i = 0, field = 0; i < list.length; i += 2, field++) {
    const name = list[i]!;
    const value = list[i + 1]!;
    const never = sensitive < neverIndexed.length && neverIndexed[sensitive] === field;
    if (never) sensitive++;
    if (inject && name === inject[0]) continue;
    at = putField(out, at, name, value, never);
  }
  if (inject) at = putField(out, at, inject[0], inject[1], false);
  return out.subarray(0, at);
}

function putField(out: Buffer, at: number, name: string, value: string, never: boolean): number {
  if (!never) {
    const whole = STATIC_FIELD_INDEX.get(name)?.get(value);
    if (whole !== undefined) return putInt(out, at, whole, 7, 0x80);
  }
  const high = never ? 0x10 : 0;
  const index = STATIC_NAME_INDEX.get(name);
  if (index !== undefined) at = putInt(out, at, index, 4, high);
  else {
    out[at++] = high;
    at = putString(out, at, name);
  }
  return putString(out, at, value);
}
