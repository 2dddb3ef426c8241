// What a hop keeps per stream id (its streams, a connection's calls, an endpoint
// connection's sinks): a table keyed by HTTP/2 stream id that allocates nothing
// while a connection's streams come and go.
//
// A Map would do, but V8's Map keeps deleted entries until it rebuilds its table,
// and rebuilds it whenever the deleted ones fill it or it falls to a quarter full:
// with streams opened and ended one after another (each id new, each call a
// stream on two hops) that is a new table every few calls, and a new one each
// time the last stream ends. Here the table is open addressing over the ids
// (linear probing, a deletion shifting back what follows it), grown when half full
// and never shrunk: the ids of a connection's streams in flight are few and close,
// so (id >>> 1) spreads them over the slots without a hash.
//
// | operation | cost                                  |
// |-----------|---------------------------------------|
// | get, set  | a probe or two; set may grow (doubling) |
// | delete    | the probe, then a shift of the run after it |
// | values    | a new array of the live values (rare paths: a connection's end, a SETTINGS change) |

/** The slots a table starts with: a client connection's few calls at once. */
const INITIAL_SLOTS = 8;

export class StreamTable<V> {
  /** Stream ids by slot; 0 (no stream has it) marks an empty slot. */
  private ids = new Int32Array(INITIAL_SLOTS);
  private vals: (V | undefined)[] = new Array<V | undefined>(INITIAL_SLOTS).fill(undefined);
  private mask = INITIAL_SLOTS - 1;
  /** Ids held. */
  size = 0;

  get(id: number): V | undefined {
    const ids = this.ids;
    const mask = this.mask;
    for (let i = (id >>> 1) & mask; ; i = (i + 1) & mask) {
      const at = ids[i]!;
      if (at === id) return this.vals[i];
      if (at === 0) return undefined;
    }
  }

  /** Sets `id` (a stream id, 1 to 2^31-1) to `v`. */
  set(id: number, v: V): void {
    // 0 marks an empty slot: stream 0 is the connection's, never a stream of its own (RFC 9113 §5.1.1).
    if (!(id > 0 && id <= 0x7fffffff)) throw new RangeError(`stream id ${id} outside 1 to 2^31-1`);
    if ((this.size + 1) * 2 > this.ids.length) this.grow();
    const ids = this.ids;
    const mask = this.mask;
    for (let i = (id >>> 1) & mask; ; i = (i + 1) & mask) {
      const at = ids[i]!;
      if (at === id) {
        this.vals[i] = v;
        return;
      }
      if (at === 0) {
        ids[i] = id;
        this.vals[i] = v;
        this.size++;
        return;
      }
    }
  }

  /** Removes `id`; whether it was there. */
  delete(id: number): boolean {
    if (id === 0) return false;
    const ids = this.ids;
    const vals = this.vals;
    const mask = this.mask;
    let i = (id >>> 1) & mask;
    for (; ; i = (i + 1) & mask) {
      const at = ids[i]!;
      if (at === id) break;
      if (at === 0) return false;
    }
    // Backward shift: an entry further along the run moves into the hole unless
    // its home slot lies (cyclically) after the hole, where a probe for it starts past the hole.
    for (let j = (i + 1) & mask; ids[j] !== 0; j = (j + 1) & mask) {
      const home = (ids[j]! >>> 1) & mask;
      if (((j - home) & mask) >= ((j - i) & mask)) {
        ids[i] = ids[j]!;
        vals[i] = vals[j];
        i = j;
      }
    }
    ids[i] = 0;
    vals[i] = undefined;
    this.size--;
    return true;
  }

  /** The live values, in no particular order, as a new array (so the table may change while it is walked). */
  values(): V[] {
    const out: V[] = [];
    for (let i = 0; i < this.ids.length; i++) if (this.ids[i] !== 0) out.push(this.vals[i]!);
    return out;
  }

  /** The live ids and values, as `values` gives them. */
  entries(): [number, V][] {
    const out: [number, V][] = [];
    for (let i = 0; i < this.ids.length; i++) if (this.ids[i] !== 0) out.push([this.ids[i]!, this.vals[i]!]);
    return out;
  }

  clear(): void {
    this.ids.fill(0);
    this.vals.fill(undefined);
    this.size = 0;
  }

  private grow(): void {
    const ids = this.ids;
    const vals = this.vals;
    const slots = ids.length * 2;
    this.ids = new Int32Array(slots);
    this.vals = new Array<V | undefined>(slots).fill(undefined);
    this.mask = slots - 1;
    this.size = 0;
    for (let i = 0; i < ids.length; i++) if (ids[i] !== 0) this.set(ids[i]!, vals[i]!);
  }
}
