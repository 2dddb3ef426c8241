// An HPACK decoder (RFC 7541) that follows one direction of a connection it
// does not terminate: the header blocks pass through untouched, and this copy
// of the peer's decoding state reads the same headers the peer reads.
//
// Strings are latin1 (one char per octet), so a string's length is its size in
// octets and the dynamic table's size (§4.1) stays exact for any bytes.
import { ErrorCode, RpcscopeError } from '../core/errors.ts';
import { huffmanDecode, latin1 } from './hpack-huffman.ts';
import { STATIC_LENGTH, STATIC_TABLE } from './hpack-static-table.ts';

/** §4.1: each entry costs its name and value octets plus 32. */
const ENTRY_OVERHEAD = 32;
/** SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2). */
export const DEFAULT_TABLE_SIZE = 4096;

export class HpackError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.HPACK, message);
    this.name = 'HpackError';
  }
}

/**
 * Decoded headers, flat: name, value, name, value… Read-only, and reused by
 * later decodes of the same decoder (its working list, or a repeated block's
 * list, `BlockMemo`): a caller that keeps them copies them, none changes them.
 */
export type HeaderList = string[];

export class HpackDecoder {
  // The dynamic table as a ring: `head` is the newest entry (index 62).
  private names: string[] = new Array(64);
  private values: string[] = new Array(64);
  private head = 0;
  private count = 0;
  private size = 0;
  private maxSize: number;
  private listOctets = 0;
  /**
   * The fields of the last block sent as never indexed (§6.2.3), by position
   * (0 for the first field): a block written anew must keep them so (§6.2.3).
   */
  readonly neverIndexed: number[] = [];
  /**
   * The last value sent without indexing (§6.2.2) under each static name, as
   * its octets on the wire and the string they decoded to. Such a field comes
   * again on every message of a connection (nghttp2 and most HPACK encoders
   * index no :path, content-length or etag), and a repeat is compared octet by
   * octet instead of decoded anew: no Huffman decoding, no new string, and the
   * same string each time (whose hash V8 keeps, for the encoder's lookups).
   * Values over CACHED_VALUE_MAX octets, never-indexed ones, and any past
   * CACHED_OCTETS_MAX octets kept in all are decoded each time, so a peer
   * cannot make a connection hold more than that.
   */
  private cachedOctets: (Uint8Array | undefined)[] | undefined;
  private cachedValues: string[] | undefined;
  private cachedTotal = 0;
  /** Bumped by whatever changes the dynamic table (an insertion, with its evictions; a size update). */
  private version = 0;
  /**
   * The lists of the last two blocks, which decodes take turns to fill (the one
   * used less lately), each with its block's octets when it left the table as it
   * was (BlockMemo): a repeat is known by them. Made at the first decode.
   */
  private slots: BlockMemo[] | undefined;
  private recent = 1;
  /** Blocks in a row that were no repeat (MISSES_KEPT). */
  private misses = 0;
  /** The last number given to a kept block, and the last decoded block's (`repeat`). */
  private kept = 0;
  private lastRepeat = 0;

  /**
   * @param limit the largest table size the encoder may ask for: the decoding
   * peer's SETTINGS_HEADER_TABLE_SIZE (raise it with `setLimit` as SETTINGS pass).
   * @param maxListSize the largest header list (§4.1 sizes) a decode returns in
   * full. Each 1-octet reference to a 4 KB table entry decodes to 4 KB, so a
   * block's list can be 4,000 times the block; past the cap the rest of the block
   * is still read (the table must stay in step) but no field is added, and
   * `overflowed` says the list is cut. Whoever writes a block anew from the list
   * checks it first.
   */
  constructor(private limit = DEFAULT_TABLE_SIZE, private readonly maxListSize = Infinity) {
    this.maxSize = limit;
  }

  /** Whether the last block's header list went past `maxListSize` (the list returned holds the fields before it). */
  get overflowed(): boolean {
    return this.listOctets > this.maxListSize;
  }

  /** The size of the last block's header list (RFC 7541 §4.1: name + value + 32 a field), counted past the cap too. */
  get listSize(): number {
    return this.listOctets;
  }

  setLimit(limit: number): void {
    this.limit = limit;
  }

  /** Octets kept to compare repeated values without indexing with (`cachedOctets`): CACHED_OCTETS_MAX at most. */
  get keptOctets(): number {
    return this.cachedTotal;
  }

  /**
   * The last decoded block's number while it is kept: the same for each repeat
   * of it, and never given to another block by this decoder; 0 when it was not
   * kept. What a caller derives from a list (its fields, its protocol) holds for
   * every later list with the same number.
   */
  get repeat(): number {
    return this.lastRepeat;
  }

  /** The dynamic table's current size in octets (§4.1). */
  get tableSize(): number {
    return this.size;
  }

  /** The dynamic table's entries, newest first (index 62 first). */
  entries(): [string, string][] {
    const list: [string, string][] = [];
    for (let i = 0; i < this.count; i++) {
      const at = (this.head + i) & (this.names.length - 1);
      list.push([this.names[at]!, this.values[at]!]);
    }
    return list;
  }

  /** Decodes one complete header block; throws HpackError on malformed input. */
  decode(block: Uint8Array): HeaderList {
    const n = block.length;
    const slots = (this.slots ??= [emptySlot(), emptySlot()]);
    for (let k = 0; k < MEMO_SLOTS; k++) {
      const m = slots[k]!;
      if (m.version === this.version && m.octets.length === n && sameOctets(m.octets, block, 0)) {
        this.recent = k;
        this.misses = 0;
        this.lastRepeat = m.id;
        this.listOctets = m.listOctets;
        const never = this.neverIndexed;
        while (never.length > 0) never.pop();
        return m.list;
      }
    }
    // Decoded into the slot used least lately: its list is what this block returns, kept or not.
    const k = 1 - this.recent;
    const m = slots[k]!;
    this.recent = k;
    const version = this.version;
    m.version = -1;
    this.lastRepeat = 0;
    this.decodeFields(block, m.list);
    // Neither the table nor a never-indexed field: the same octets decode to the same list while the table stays.
    const keep = ++this.misses <= MISSES_KEPT || this.misses % KEPT_PAST_THEM === 0;
    if (keep && this.version === version && this.neverIndexed.length === 0 && n > 0 && n <= MEMO_BLOCK_MAX) {
      if (m.octets.length !== n) m.octets = new Uint8Array(n);
      for (let i = 0; i < n; i++) m.octets[i] = block[i]!;
      m.version = version;
      m.listOctets = this.listOctets;
      m.id = this.lastRepeat = ++this.kept;
    }
    return m.list;
  }

  private decodeFields(block: Uint8Array, out: HeaderList): void {
    // Emptied by pops: setting `length` is a call into V8's runtime, a pop is not.
    while (out.length > 0) out.pop();
    this.listOctets = 0;
    const never = this.neverIndexed;
    while (never.length > 0) never.pop();
    let i = 0;
    const end = block.length;
    let headerSeen = false;
    while (i < end) {
      const b = block[i]!;
      if (b & 0x80) {
        // §6.1 indexed header field.
        const index = readInt(block, i, 7);
        i = cursor;
        if (index === 0) throw new HpackError('indexed header field with index 0');
        this.pushIndexed(out, index);
        headerSeen = true;
      } else if (b & 0x40) {
        // §6.2.1 literal with incremental indexing.
        i = this.literal(block, i, 6, out);
        this.insert(literalName, literalValue);
        headerSeen = true;
      } else if (b & 0x20) {
        // §6.3 dynamic table size update: only before the first field of a block (§4.2).
        if (headerSeen) throw new HpackError('dynamic table size update after a header field');
        const size = readInt(block, i, 5);
        i = cursor;
        if (size > this.limit) throw new HpackError(`dynamic table size update to ${size} above the limit ${this.limit}`);
        this.version++;
        this.maxSize = size;
        // §4.3: only what no longer fits goes; the encoder keeps the rest and refers to it.
        this.evict(size);
      } else {
        // §6.2.2 without indexing, §6.2.3 never indexed: both 4-bit prefixes.
        if (b & 0x10) {
          this.neverIndexed.push(out.length / 2);
          i = this.literal(block, i, 4, out);
        } else i = this.unindexed(block, i, out);
        headerSeen = true;
      }
    }
  }

  private pushIndexed(out: HeaderList, index: number): void {
    if (index <= STATIC_LENGTH) {
      const e = STATIC_TABLE[index]!;
      return this.emit(out, e[0], e[1]);
    }
    const d = index - STATIC_LENGTH - 1;
    if (d >= this.count) throw new HpackError(`index ${index} beyond the dynamic table`);
    const at = (this.head + d) & (this.names.length - 1);
    this.emit(out, this.names[at]!, this.values[at]!);
  }

  /** Adds a field to the list while the list is within its cap. */
  private emit(out: HeaderList, name: string, value: string): void {
    this.listOctets += name.length + value.length + ENTRY_OVERHEAD;
    if (this.listOctets <= this.maxListSize) out.push(name, value);
  }

  private nameAt(index: number): string {
    if (index <= STATIC_LENGTH) return STATIC_TABLE[index]![0];
    const d = index - STATIC_LENGTH - 1;
    if (d >= this.count) throw new HpackError(`name index ${index} beyond the dynamic table`);
    return this.names[(this.head + d) & (this.names.length - 1)]!;
  }

  /** A literal field (§6.2) whose representation starts at `i` with an N-bit index prefix. */
  private literal(block: Uint8Array, i: number, prefix: number, out: HeaderList): number {
    const index = readInt(block, i, prefix);
    const name = index === 0 ? readString(block, cursor) : this.nameAt(index);
    const value = readString(block, cursor);
    literalName = name;
    literalValue = value;
    this.emit(out, name, value);
    return cursor;
  }

  /** A §6.2.2 literal without indexing: under a static name, its value may repeat the last one (`cachedOctets`). */
  private unindexed(block: Uint8Array, i: number, out: HeaderList): number {
    const index = readInt(block, i, 4);
    if (index === 0 || index > STATIC_LENGTH) return this.literal(block, i, 4, out);
    const at = cursor;
    if (at >= block.length) throw new HpackError('string literal runs past the end of the block');
    const len = readInt(block, at, 7);
    const start = cursor;
    const end = start + len;
    if (end > block.length) throw new HpackError('string literal runs past the end of the block');
    if (len > CACHED_VALUE_MAX) return this.literal(block, i, 4, out);
    const name = STATIC_TABLE[index]![0];
    const octets = (this.cachedOctets ??= new Array<Uint8Array | undefined>(STATIC_LENGTH + 1))[index];
    // The octets from the string's first (its Huffman flag and length) to its last.
    if (octets !== undefined && octets.length === end - at && sameOctets(octets, block, at)) {
      this.emit(out, name, this.cachedValues![index]!);
      return end;
    }
    const value = readString(block, at);
    const held = octets?.length ?? 0;
    if (this.cachedTotal - held + (end - at) <= CACHED_OCTETS_MAX) {
      const kept = held === end - at ? octets! : new Uint8Array(end - at);
      kept.set(block.subarray(at, end));
      this.cachedOctets[index] = kept;
      this.cachedTotal += kept.length - held;
      (this.cachedValues ??= new Array<string>(STATIC_LENGTH + 1))[index] = value;
    }
    this.emit(out, name, value);
    return end;
  }

  private insert(name: string, value: string): void {
    this.version++;
    const cost = name.length + value.length + ENTRY_OVERHEAD;
    // §4.4: an entry larger than the table empties it and is not added.
    if (cost > this.maxSize) return this.evict(0);
    this.evict(this.maxSize - cost);
    if (this.count === this.names.length) this.grow();
    const cap = this.names.length;
    this.head = (this.head - 1 + cap) & (cap - 1);
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.count++;
    this.size += cost;
  }

  /** Drops the oldest entries until the table fits `room` octets. */
  private evict(room: number): void {
    const mask = this.names.length - 1;
    while (this.size > Math.min(room, this.maxSize) && this.count > 0) {
      const at = (this.head + this.count - 1) & mask;
      this.size -= this.names[at]!.length + this.values[at]!.length + ENTRY_OVERHEAD;
      this.names[at] = '';
      this.values[at] = '';
      this.count--;
    }
  }

  private grow(): void {
    const cap = this.names.length;
    const names: string[] = new Array(cap * 2);
    const values: string[] = new Array(cap * 2);
    for (let k = 0; k < this.count; k++) {
      names[k] = this.names[(this.head + k) & (cap - 1)]!;
      values[k] = this.values[(this.head + k) & (cap - 1)]!;
    }
    this.names = names;
    this.values = values;
    this.head = 0;
  }
}

/** The longest value the decoder keeps to compare with the next (`cachedOctets`): a :path of a gRPC method, a length, an etag. */
const CACHED_VALUE_MAX = 128;
/** The most octets a decoder keeps for that in all (a few such fields; the dynamic table holds 4,096). */
const CACHED_OCTETS_MAX = 512;

/** Blocks kept to compare with: two (decodes take turns between them, `1 - recent`), so that a response's headers and its trailers, taking turns on a connection, both repeat. */
const MEMO_SLOTS = 2;
/** The longest block kept (a gRPC call's request headers once the table holds them are 20–60 octets). */
const MEMO_BLOCK_MAX = 128;
/**
 * Past MISSES_KEPT blocks in a row that were no repeat, one in KEPT_PAST_THEM is
 * kept: a connection whose blocks never repeat (REST paths carrying ids) does not
 * pay to keep each, and one whose blocks start repeating is caught within as many.
 */
export const MISSES_KEPT = 4;
export const KEPT_PAST_THEM = 16;

/**
 * A header block that left the dynamic table as it found it (no insertion, no
 * size update) and held no never-indexed field: while the table's `version` is
 * the same, the same octets decode to the same list, whose size was `listOctets`.
 */
interface BlockMemo {
  /** The block's octets, exactly. */
  octets: Uint8Array;
  version: number;
  list: HeaderList;
  listOctets: number;
  /** Its number (HpackDecoder.repeat), given as it was kept. */
  id: number;
}

const NO_OCTETS = new Uint8Array(0);
/** A slot that holds no block yet: no table's version is -1. */
const emptySlot = (): BlockMemo => ({ octets: NO_OCTETS, version: -1, list: [], listOctets: 0, id: 0 });

/** Whether `block` from `at` holds `octets`. */
function sameOctets(octets: Uint8Array, block: Uint8Array, at: number): boolean {
  for (let k = 0; k < octets.length; k++) if (octets[k] !== block[at + k]) return false;
  return true;
}

/** Where the last readInt or readString stopped: a module variable rather than a returned tuple, so that reading allocates nothing. */
let cursor = 0;
/** The last literal field read, likewise (the list may no longer take it). */
let literalName = '';
let literalValue = '';

/** §5.1 integer with an N-bit prefix, from offset `i`; leaves `cursor` after it. */
function readInt(block: Uint8Array, i: number, prefix: number): number {
  const mask = (1 << prefix) - 1;
  let value = block[i]! & mask;
  i++;
  if (value < mask) {
    cursor = i;
    return value;
  }
  let shift = 0;
  for (;;) {
    if (i >= block.length) throw new HpackError('integer runs past the end of the block');
    const b = block[i++]!;
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if ((b & 0x80) === 0) break;
    // Nothing in a header block needs more than 2^28; a longer run is hostile.
    if (shift > 28) throw new HpackError('integer too large');
  }
  cursor = i;
  return value;
}

/** §5.2 string literal from offset `i`; leaves `cursor` after it. */
function readString(block: Uint8Array, i: number): string {
  if (i >= block.length) throw new HpackError('string literal runs past the end of the block');
  const huffman = (block[i]! & 0x80) !== 0;
  const len = readInt(block, i, 7);
  const start = cursor;
  const end = start + len;
  if (end > block.length) throw new HpackError('string literal runs past the end of the block');
  cursor = end;
  if (!huffman) return latin1(block, start, len);
  const s = huffmanDecode(block, start, end);
  if (s === undefined) throw new HpackError('invalid Huffman code');
  return s;
}
