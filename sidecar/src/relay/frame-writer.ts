// Header blocks of the relay's own, encoded so that they leave both HPACK
// tables as they were (RFC 7541 §6.2.2, literals without indexing; names from
// the static table): the block passes through no table, so the relayed blocks
// around it still decode the same. The frames that carry them are HTTP/2's
// (h2/frames.ts).
import { STATIC_NAME_INDEX } from './hpack-static-table.ts';

/** §5.1 integer with an N-bit prefix, the prefix's other bits set to `high`. */
function pushInt(out: number[], value: number, prefix: number, high: number): void {
  const max = (1 << prefix) - 1;
  if (value < max) {
    out.push(high | value);
    return;
  }
  out.push(high | max);
  value -= max;
  while (value >= 128) {
    out.push((value % 128) | 0x80);
    value = Math.floor(value / 128);
  }
  out.push(value);
}

function pushString(out: number[], s: string): void {
  const bytes = Buffer.from(s, 'latin1');
  pushInt(out, bytes.length, 7, 0);
  for (const b of bytes) out.push(b);
}

/**
 * A header block of literals without indexing. `sizeUpdate` starts it with a
 * dynamic table size update (§6.3): the first block a decoder reads after a
 * table size change in SETTINGS must carry one (§4.2).
 */
export function encodeLiteralBlock(headers: readonly (readonly [string, string])[], sizeUpdate?: number): Buffer {
  const out: number[] = [];
  if (sizeUpdate !== undefined) pushInt(out, sizeUpdate, 5, 0x20);
  for (const [name, value] of headers) {
    const index = STATIC_NAME_INDEX.get(name);
    if (index !== undefined) pushInt(out, index, 4, 0);
    else {
      out.push(0);
      pushString(out, name);
    }
    pushString(out, value);
  }
  return Buffer.from(out);
}
