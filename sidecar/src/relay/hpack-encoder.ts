// An HPACK encoder with a dynamic table (RFC 7541), for the header blocks
// rpcscope writes on a connection of its own: the outbound proxy decodes a
// client's blocks and writes them anew for each endpoint connection, and the
// responses the other way. Unlike hpack-literal-encoder.ts (which never touches
// the peer's table), this one keeps a copy of the table it fills in the peer's
// decoder, so that a field sent before costs one octet the next time.
//
// Indexing policy, field by field (the first row that applies):
//
//   field                                   representation (RFC 7541)   why
//   position in `neverIndexed`              §6.2.3 never indexed        the client sent it so; §6.2.3 asks every hop to keep it so
//   authorization, proxy-authorization      §6.2.3 never indexed        credentials: a table entry lets a compression oracle guess
//                                                                       them (§7.1); nghttp2 sends authorization so too
//   cookie under 20 octets                  §6.2.3 never indexed        short enough to guess by probing the table (nghttp2's rule)
//   name and value in the static table      §6.1 indexed, static        one octet, no table state
//   name and value in the dynamic table     §6.1 indexed, dynamic       one or two octets
//   set-cookie                              §6.2.2 without indexing     a secret, and per response (nghttp2 does not index it)
//   content-length, date                    §6.2.2 without indexing     change from message to message: an entry would only
//   grpc-timeout, grpc-message                                          push out fields that repeat (grpc-timeout is the
//   traceparent, tracestate, x-request-id                               deadline left, grpc-message the error text, trace and
//                                                                       request ids are per call)
//   :path with a query (?) or over 100      §6.2.2 without indexing     per-request URLs (ids, signed queries); nghttp2 indexes
//     octets                                                            no :path at all, but a gRPC method path
//                                                                       (/package.Service/Method) repeats call after call
//   entry (§4.1 size) over 1/4 of the table §6.2.2 without indexing     it would evict a quarter of the table or more for a
//                                                                       field that may not come again
//   grpc-status                             §6.2.1 incremental          a handful of values, "0" nearly always: one octet per
//                                                                       trailer block after the first
//   anything else                           §6.2.1 incremental          user-agent, :authority, content-type, te,
//                                                                       grpc-encoding… repeat on every call of a connection
//
// Names are taken from the static table, else from the newest dynamic entry of
// that name, else written out (§6.2). Strings are Huffman coded (§5.2) unless
// that is longer, raw otherwise. Names and values are latin1 (one char per octet),
// as HpackDecoder gives them.
import { KEPT_PAST_THEM, MISSES_KEPT } from './hpack-decoder.ts';
import { huffmanEncode, huffmanLength } from './hpack-huffman.ts';
import { putInt, putString } from './hpack-literal-encoder.ts';
import { STATIC_FIELD_INDEX, STATIC_LENGTH, STATIC_NAME_INDEX } from './hpack-static-table.ts';

/** §4.1: each entry costs its name and value octets plus 32. */
const ENTRY_OVERHEAD = 32;
/** The field positions of a block the encoder remembers (`memoNames`): a gRPC call's request has about ten. */
const MEMO_FIELDS = 16;
/** The longest literal kept to copy (`memoOctets`): a date is 22 octets Huffman coded, a content-length a few. */
const MEMO_LITERAL_MAX = 48;

/** How one field is written when the tables do not hold it whole. */
export type Indexing = 'incremental' | 'without' | 'never';

/** Chooses a field's representation; `tableMax` is the dynamic table's current maximum size. */
export type IndexingPolicy = (name: string, value: string, tableMax: number) => Indexing;

/** Names whose representation does not depend on the value (see the table above). */
const BY_NAME = new Map<string, Indexing>([
  ['authorization', 'never'],
  ['proxy-authorization', 'never'],
  ['set-cookie', 'without'],
  ['content-length', 'without'],
  ['date', 'without'],
  ['grpc-timeout', 'without'],
  ['grpc-message', 'without'],
  ['traceparent', 'without'],
  ['tracestate', 'without'],
  ['x-request-id', 'without'],
]);

/** The longest :path indexed: past it a path is more likely a one-off URL than a method. */
const LONGEST_INDEXED_PATH = 100;

/** rpcscope's policy, the table at the top of this file. */
export const rpcscopeIndexing: IndexingPolicy = (name, value, tableMax) => {
  const fixed = BY_NAME.get(name);
  if (fixed === 'never') return fixed;
  if (name === 'cookie' && value.length < 20) return 'never';
  if (fixed !== undefined) return fixed;
  if (name === ':path' && (value.length > LONGEST_INDEXED_PATH || value.includes('?'))) return 'without';
  if ((name.length + value.length + ENTRY_OVERHEAD) * 4 > tableMax) return 'without';
  return 'incremental';
};

export interface HpackEncoderOptions {
  /** Huffman code strings when shorter (default true); false writes every string raw. */
  huffman?: boolean;
  /** The representation of fields the tables do not hold whole (default rpcscopeIndexing). */
  indexing?: IndexingPolicy;
  /**
   * The largest table rpcscope keeps for a peer, whatever its
   * SETTINGS_HEADER_TABLE_SIZE (default 4096, nghttp2's cap for its encoder):
   * a peer announcing a larger table does not make the proxy hold more per connection.
   */
  limit?: number;
}

/** The dynamic table's entries of one name: the newest's absolute index, and each value's newest. */
interface NameEntries {
  newest: number;
  values: Map<string, number>;
}

export class HpackEncoder {
  // The dynamic table as a ring over absolute insertion indices: entry `a` is
  // at `a & mask`; `inserted` is the next index, the oldest live one is
  // `inserted - count`. Its HPACK index is STATIC_LENGTH + inserted - a (§2.3.3).
  private names: string[] = new Array<string>(32);
  private values: string[] = new Array<string>(32);
  private inserted = 0;
  private count = 0;
  private size = 0;
  private max: number;
  /** Name → value → newest absolute index; every key names a live entry (eviction removes what it evicts). */
  private readonly byName = new Map<string, NameEntries>();
  /**
   * Position by position, the last field found whole in a table, and where:
   * calls on a connection send the same fields in the same order, so the next
   * block's field there is most often the same strings (HpackDecoder hands out
   * the same string for a repeat), found with two comparisons instead of three
   * map lookups. `memoAt`: minus the static index, or the dynamic entry's
   * absolute index, good while that entry lives; Infinity for a literal
   * without indexing under a static name (a date, a content-length), whose
   * octets `memoOctets` keeps; NaN at a position not yet remembered, which no
   * comparison takes (a field may well be '' and ''). A new table size forgets
   * them all (the policy's choice of literal depends on it).
   */
  private readonly memoNames: string[] = new Array<string>(MEMO_FIELDS).fill('');
  private readonly memoValues: string[] = new Array<string>(MEMO_FIELDS).fill('');
  private readonly memoAt: number[] = new Array<number>(MEMO_FIELDS).fill(NaN);
  private readonly memoOctets: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(MEMO_FIELDS).fill(undefined);
  /** Bumped by whatever changes the table (an insertion and its evictions, a new maximum). */
  private version = 0;
  /** The last blocks that left the table as it was, to write a repeat by (EncodedBlock); made at the first. */
  private blocks: EncodedBlock[] | undefined;
  /** The slot last hit or written: the other is written next. */
  private recentBlock = 0;
  /** Lists in a row that were no repeat: past a few, few are kept (MISSES_KEPT, as the decoder). */
  private misses = 0;
  /** The smallest maximum set since the last block, and whether the next block starts with size updates (§4.2). */
  private smallestSince = Infinity;
  private updatePending = false;
  private readonly huffman: boolean;
  private readonly indexing: IndexingPolicy;
  private readonly limit: number;

  /** @param maxTableSize the table size both ends start with: SETTINGS_HEADER_TABLE_SIZE's initial 4096 (RFC 9113 §6.5.2). */
  constructor(maxTableSize = 4096, options: HpackEncoderOptions = {}) {
    this.huffman = options.huffman ?? true;
    this.indexing = options.indexing ?? rpcscopeIndexing;
    this.limit = options.limit ?? 4096;
    this.max = maxTableSize;
    if (maxTableSize > this.limit) this.setMaxTableSize(maxTableSize);
  }

  /** Octets the dynamic table holds (§4.1 size: name + value + 32 per entry). */
  get tableSize(): number {
    return this.size;
  }

  /** The dynamic table's current maximum size. */
  get maxTableSize(): number {
    return this.max;
  }

  /** The dynamic table's entries, newest first (index 62 first), as HpackDecoder.entries() gives them. */
  entries(): [string, string][] {
    const list: [string, string][] = [];
    const mask = this.names.length - 1;
    for (let a = this.inserted - 1; a >= this.inserted - this.count; a--) list.push([this.names[a & mask]!, this.values[a & mask]!]);
    return list;
  }

  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE changed: the table shrinks (evicting)
   * at once, and the next block starts with a dynamic table size update (§4.2,
   * §6.3). Several changes between blocks: the block signals the smallest, then
   * the final (§4.2), so the peer evicts what this table evicted.
   */
  setMaxTableSize(size: number): void {
    const next = Math.min(size, this.limit);
    if (next === this.max && !this.updatePending) return;
    this.version++;
    this.updatePending = true;
    this.memoAt.fill(NaN);
    if (next < this.smallestSince) this.smallestSince = next;
    this.max = next;
    this.evict(next);
  }

  /**
   * Encodes `list` (name, value, name, value…; lower-case names, latin1
   * strings). `neverIndexed`: sorted field positions (0 for the first field)
   * to send as never-indexed literals (§6.2.3). Returns a fresh Buffer.
   */
  encode(list: readonly string[], neverIndexed: readonly number[] = NONE): Buffer {
    const out = Buffer.allocUnsafe(encodedBound(list));
    return out.subarray(0, this.encodeInto(list, out, 0, neverIndexed));
  }

  /**
   * Encodes `list` as `encode` does, into `out` from `at`, where at least
   * encodedBound(list) octets are free; returns where the block ends.
   */
  encodeInto(list: readonly string[], out: Buffer, at: number, neverIndexed: readonly number[] = NONE): number {
    const blocks = this.blocks;
    // A pending size update bumped `version`: no kept block matches until a block has led with it.
    if (blocks !== undefined && neverIndexed.length === 0) {
      for (let k = 0; k < blocks.length; k++) {
        const b = blocks[k]!;
        if (b.version === this.version && sameList(b.list, list)) {
          this.recentBlock = k;
          this.misses = 0;
          const octets = b.octets;
          for (let i = 0; i < octets.length; i++) out[at + i] = octets[i]!;
          return at + octets.length;
        }
      }
    }
    const start = at;
    const version = this.version;
    const plain = neverIndexed.length === 0 && !this.updatePending;
    at = this.encodeFields(list, out, at, neverIndexed);
    // Nothing entered the table and no update led: the same list writes the same octets while the table stays.
    const keep = ++this.misses <= MISSES_KEPT || this.misses % KEPT_PAST_THEM === 0;
    if (keep && plain && this.version === version && at - start <= BLOCK_MEMO_MAX) this.rememberBlock(list, out, start, at);
    return at;
  }

  /**
   * Keeps `list` and its octets in the slot used less lately (of two): the
   * request a client sends on every call, and an endpoint's answer headers and
   * trailers (taking turns), are then written by copying, not field by field,
   * and a block that comes once does not push out one that repeats.
   */
  private rememberBlock(list: readonly string[], out: Buffer, start: number, end: number): void {
    const blocks = (this.blocks ??= []);
    const k = blocks.length < BLOCK_SLOTS ? blocks.length : 1 - this.recentBlock;
    let b = blocks[k];
    if (b === undefined) {
      b = { octets: new Uint8Array(end - start), list: [], version: 0 };
      blocks.push(b);
    } else if (b.octets.length !== end - start) b.octets = new Uint8Array(end - start);
    this.recentBlock = k;
    for (let i = start; i < end; i++) b.octets[i - start] = out[i]!;
    b.version = this.version;
    const kept = b.list;
    while (kept.length > 0) kept.pop();
    for (let i = 0; i < list.length; i++) kept.push(list[i]!);
  }

  private encodeFields(list: readonly string[], out: Buffer, at: number, neverIndexed: readonly number[]): number {
    if (this.updatePending) {
      if (this.smallestSince < this.max) at = putInt(out, at, this.smallestSince, 5, 0x20);
      at = putInt(out, at, this.max, 5, 0x20);
      this.updatePending = false;
      this.smallestSince = Infinity;
    }
    let sensitive = 0;
    const memoNames = this.memoNames;
    const memoValues = this.memoValues;
    for (let i = 0, field = 0; i < list.length; i += 2, field++) {
      const never = sensitive < neverIndexed.length && neverIndexed[sensitive] === field;
      if (never) sensitive++;
      const name = list[i]!;
      const value = list[i + 1]!;
      if (!never && field < MEMO_FIELDS && memoNames[field] === name && memoValues[field] === value) {
        // The field at this position in the last block (`memoAt`): written as a literal then, or found whole in a table.
        const a = this.memoAt[field]!;
        if (a === Infinity) {
          const octets = this.memoOctets[field]!;
          out.set(octets, at);
          at += octets.length;
          continue;
        }
        if (a < 0) {
          at = putInt(out, at, -a, 7, 0x80);
          continue;
        }
        // An entry never changes while it lives (absolute indices are not reused).
        if (a >= this.inserted - this.count) {
          at = putInt(out, at, STATIC_LENGTH + this.inserted - a, 7, 0x80);
          continue;
        }
      }
      at = this.putField(out, at, name, value, never, field);
    }
    return at;
  }

  private putField(out: Buffer, at: number, name: string, value: string, never: boolean, field: number): number {
    const entries = this.byName.get(name);
    if (!never) {
      // §6.1: the whole field from the static table, else the dynamic table. The
      // policy is asked only for a literal: a field it never indexes is whole in
      // neither table (the static table holds no value of those names, and this
      // encoder inserts none of them), so a hit is never such a field.
      const whole = STATIC_FIELD_INDEX.get(name)?.get(value);
      if (whole !== undefined) {
        this.remember(field, name, value, -whole);
        return putInt(out, at, whole, 7, 0x80);
      }
      const a = entries?.values.get(value);
      if (a !== undefined) {
        this.remember(field, name, value, a);
        return putInt(out, at, STATIC_LENGTH + this.inserted - a, 7, 0x80);
      }
    }
    const how = never ? 'never' : this.indexing(name, value, this.max);
    // §6.2: a literal, the name by index when either table has it.
    const staticName = STATIC_NAME_INDEX.get(name);
    const nameIndex = staticName ?? (entries ? STATIC_LENGTH + this.inserted - entries.newest : 0);
    const start = at;
    if (how === 'incremental') at = putInt(out, at, nameIndex, 6, 0x40);
    else at = putInt(out, at, nameIndex, 4, how === 'never' ? 0x10 : 0);
    if (nameIndex === 0) at = this.putString(out, at, name);
    at = this.putString(out, at, value);
    // Without indexing under a static name, the octets are the same whatever the table holds.
    if (how === 'without' && staticName !== undefined && field < MEMO_FIELDS && at - start <= MEMO_LITERAL_MAX) {
      const held = this.memoOctets[field];
      const octets = held !== undefined && held.length === at - start ? held : new Uint8Array(at - start);
      octets.set(out.subarray(start, at));
      this.memoOctets[field] = octets;
      this.remember(field, name, value, Infinity);
    }
    // Inserted after the name index is written: the peer reads the name before the entry evicts it (§4.4).
    if (how === 'incremental') this.insert(name, value);
    return at;
  }

  /** §5.2: Huffman coded unless that is longer (at equal length too, as Appendix C.6 codes "307"), else raw. */
  private putString(out: Buffer, at: number, s: string): number {
    if (this.huffman && s.length > 0) {
      const n = huffmanLength(s);
      if (n <= s.length) return huffmanEncode(out, putInt(out, at, n, 7, 0x80), s);
    }
    return putString(out, at, s);
  }

  /** The field at position `field` was found whole: at static index -`at` (negative), or dynamic absolute index `at`. */
  private remember(field: number, name: string, value: string, at: number): void {
    if (field >= MEMO_FIELDS) return;
    this.memoNames[field] = name;
    this.memoValues[field] = value;
    this.memoAt[field] = at;
  }

  private insert(name: string, value: string): void {
    this.version++;
    const cost = name.length + value.length + ENTRY_OVERHEAD;
    // §4.4: an entry larger than the table empties it and is not added.
    if (cost > this.max) return this.evict(0);
    this.evict(this.max - cost);
    if (this.count === this.names.length) this.grow();
    const a = this.inserted++;
    const mask = this.names.length - 1;
    this.names[a & mask] = name;
    this.values[a & mask] = value;
    this.count++;
    this.size += cost;
    const entries = this.byName.get(name);
    if (entries) {
      entries.newest = a;
      entries.values.set(value, a);
    } else this.byName.set(name, { newest: a, values: new Map([[value, a]]) });
  }

  /** Drops the oldest entries until the table holds at most `room` octets (§4.3). */
  private evict(room: number): void {
    const mask = this.names.length - 1;
    while (this.size > room && this.count > 0) {
      const a = this.inserted - this.count;
      const name = this.names[a & mask]!;
      const value = this.values[a & mask]!;
      this.size -= name.length + value.length + ENTRY_OVERHEAD;
      this.count--;
      this.names[a & mask] = '';
      this.values[a & mask] = '';
      // The oldest entry: if the maps point at it, no newer entry has its name or value.
      const entries = this.byName.get(name)!;
      if (entries.newest === a) this.byName.delete(name);
      else if (entries.values.get(value) === a) entries.values.delete(value);
    }
  }

  private grow(): void {
    const cap = this.names.length;
    const names = new Array<string>(cap * 2);
    const values = new Array<string>(cap * 2);
    for (let a = this.inserted - this.count; a < this.inserted; a++) {
      names[a & (cap * 2 - 1)] = this.names[a & (cap - 1)]!;
      values[a & (cap * 2 - 1)] = this.values[a & (cap - 1)]!;
    }
    this.names = names;
    this.values = values;
  }
}

const NONE: readonly number[] = [];

/**
 * A header block written while the table's `version` was this, which changed
 * nothing in it (every field found whole, or a literal without indexing) and
 * led with no size update: the same list writes the same octets again.
 */
interface EncodedBlock {
  octets: Uint8Array;
  list: string[];
  version: number;
}

/** Blocks kept to write a repeat by: two (the one used less lately is replaced, `1 - recentBlock`), so that an answer's headers and its trailers, taking turns, both repeat. */
const BLOCK_SLOTS = 2;
/** The longest block kept (a gRPC call's request, once the table holds its fields, is 10–30 octets). */
const BLOCK_MEMO_MAX = 128;

/** Whether two lists hold the same strings in the same order (the decoder hands out the same string for a repeat: mostly one comparison of references each). */
function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The most octets a block of `list` takes: each field its raw octets plus
 * three integers of up to 5 octets (indices and lengths under 2^28; Huffman
 * is used only when shorter), and two table size updates ahead of it.
 */
export function encodedBound(list: readonly string[]): number {
  let room = 12;
  for (let i = 0; i < list.length; i++) room += list[i]!.length + (i & 1 ? 5 : 10);
  return room;
}
