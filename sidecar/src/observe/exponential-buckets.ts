// A base-2 exponential histogram, OpenTelemetry's `base2_exponential_bucket_histogram`
// aggregation, kept beside a histogram cell's explicit buckets only when an
// operator asks OTLP for it (OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION):
// explicit bucket counts cannot be turned into exponential ones, so the values
// must be seen as they are recorded.
//
// As the specification's aggregation and the OpenTelemetry SDKs do: bucket i at
// scale s holds values in (2^(i·2^-s), 2^((i+1)·2^-s)]; the histogram starts at
// scale 20 and, when a value falls outside what 160 buckets span, halves its
// resolution (scale − 1 merges pairs of buckets) until it fits. Values ≤ 0 are
// counted in the zero bucket (the sidecar's durations, sizes and ratios are never
// negative).
// https://opentelemetry.io/docs/specs/otel/metrics/sdk/#base2-exponential-bucket-histogram-aggregation
// https://opentelemetry.io/docs/specs/otel/metrics/data-model/#exponentialhistogram

export const MAX_BUCKETS = 160;
export const MAX_SCALE = 20;

/** A double's bits, read through typed arrays (a DataView costs several times more here). */
const float = new Float64Array(1);
const words = new Uint32Array(float.buffer);
/** Which word holds the sign, exponent and high mantissa bits. */
const HIGH = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LOW = 1 - HIGH;
/** log2(e)·2^scale by scale, 0 … 20. */
const SCALE_FACTORS = Array.from({ length: 21 }, (_, s) => Math.LOG2E * 2 ** s);

/** The index of the bucket holding `value` (> 0) at `scale`, exact at powers of two as the SDKs are. */
export function bucketIndex(value: number, scale: number): number {
  float[0] = value;
  const high = words[HIGH]!;
  const powerOfTwo = (high & 0xfffff) === 0 && words[LOW] === 0;
  if (scale > 0 && !powerOfTwo) return Math.floor(Math.log(value) * SCALE_FACTORS[scale]!);
  // Subnormals (below 2^-1022) are counted with the smallest normal value: no duration is that short.
  const exponent = Math.max(((high >>> 20) & 0x7ff) - 1023, -1022);
  if (scale <= 0) return (exponent - (powerOfTwo ? 1 : 0)) >> -scale;
  return (exponent << scale) - 1;
}

/** The lower boundary of bucket `index` at `scale` (its upper one is index + 1's). */
export function bucketLowerBound(index: number, scale: number): number {
  return 2 ** (index * 2 ** -scale);
}

export class ExponentialBuckets {
  scale = MAX_SCALE;
  count = 0;
  sum = 0;
  zeroCount = 0;
  /** The bucket index of counts[0]. */
  offset = 0;
  counts: number[] = [];

  record(value: number): void {
    this.count++;
    this.sum += value;
    if (value > 0) this.add(bucketIndex(value, this.scale), 1);
    else this.zeroCount++;
  }

  /** Adds `n` to bucket `index` (at the current scale), lowering the scale first if the buckets would span more than MAX_BUCKETS. */
  add(index: number, n: number): void {
    const k = index - this.offset;
    if (k >= 0 && k < this.counts.length) {
      this.counts[k]! += n;
      return;
    }
    if (this.counts.length === 0) {
      this.offset = index;
      this.counts.push(n);
      return;
    }
    const low = Math.min(this.offset, index);
    const high = Math.max(this.offset + this.counts.length - 1, index);
    let change = 0;
    while ((high >> change) - (low >> change) + 1 > MAX_BUCKETS) change++;
    this.downscale(change);
    index >>= change;
    const counts = this.counts;
    if (index < this.offset) {
      counts.unshift(...new Array<number>(this.offset - index).fill(0));
      this.offset = index;
    }
    while (index - this.offset >= counts.length) counts.push(0);
    counts[index - this.offset]! += n;
  }

  /** Lowers the scale by `change`: each bucket goes to index >> change, 2^change of them merged. */
  downscale(change: number): void {
    if (change <= 0) return;
    const offset = this.offset >> change;
    const merged: number[] = [];
    for (let k = 0; k < this.counts.length; k++) {
      const j = ((this.offset + k) >> change) - offset;
      merged[j] = (merged[j] ?? 0) + this.counts[k]!;
    }
    this.counts = merged;
    this.offset = offset;
    this.scale -= change;
  }

  /** Adds `other` in: both at the lower of the two scales, then narrower still if their buckets together need it. */
  merge(other: ExponentialBuckets): void {
    this.count += other.count;
    this.sum += other.sum;
    this.zeroCount += other.zeroCount;
    if (other.counts.length === 0) return;
    const scale = Math.min(this.scale, other.scale);
    this.downscale(this.scale - scale);
    const shift = other.scale - scale;
    for (let k = 0; k < other.counts.length; k++) {
      const n = other.counts[k]!;
      // add() may lower this.scale further: an index is brought to it as it is added.
      if (n > 0) this.add(((other.offset + k) >> shift) >> (scale - this.scale), n);
    }
  }

  copy(): ExponentialBuckets {
    const c = new ExponentialBuckets();
    c.scale = this.scale;
    c.count = this.count;
    c.sum = this.sum;
    c.zeroCount = this.zeroCount;
    c.offset = this.offset;
    c.counts = [...this.counts];
    return c;
  }

  /** Starts over, at scale 20, as a delta export's next interval does. */
  reset(): void {
    this.scale = MAX_SCALE;
    this.count = this.sum = this.zeroCount = this.offset = 0;
    this.counts = [];
  }
}
