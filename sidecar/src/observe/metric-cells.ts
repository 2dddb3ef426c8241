// Metric cells aggregated by the sidecar itself. OpenTelemetry's synchronous
// instruments hash their attributes on every `record()` (a sort and a
// JSON.stringify, ~2.4 µs); here each label set is bound to a cell once, when
// first seen, after which an observation is a field increment. A scrape renders
// the cells as Prometheus text (prometheus-text.ts) or, when asked, OpenMetrics
// text (openmetrics-text.ts), each cell's label text rendered once, on its first
// scrape (prepareLabels, in slices), each family's values at once.
import type { Attributes } from '@opentelemetry/api';
import { ExponentialBuckets } from './exponential-buckets.ts';
import { counterSampleName, exemplarSuffix, openMetricsHeader } from './openmetrics-text.ts';
import { familyHeader, labelText, sampleLine, sampleValue } from './prometheus-text.ts';

/**
 * A bucket's exemplar is replaced at most this often: with tracing on, a busy
 * bucket then costs one trace lookup a second, and every other call one
 * comparison. Prometheus scrapes every 15 s or more, so it still sees a recent one.
 */
export const EXEMPLAR_INTERVAL_MS = 1000;

/** Per bucket, the latest sampled call's trace; `traceIds[i] === ''` while bucket i has none. */
class BucketExemplars {
  readonly traceIds: string[];
  readonly spanIds: string[];
  readonly values: Float64Array;
  /** Unix milliseconds; -Infinity while none, so the first offer is always due. */
  readonly times: Float64Array;

  constructor(buckets: number) {
    this.traceIds = new Array<string>(buckets).fill('');
    this.spanIds = new Array<string>(buckets).fill('');
    this.values = new Float64Array(buckets);
    this.times = new Float64Array(buckets).fill(-Infinity);
  }
}

/** A counter's or a gauge's current value. */
export class ValueCell {
  value = 0;
  /** Rendered label text, filled on the first scrape: binding a cell stays cheap. */
  labels: string | undefined;
  /** The sample line of the last scrape, kept while `value` (and the sample name) stay the same. */
  line: string | undefined;
  lineValue = 0;
  lineSample: string | undefined;
  constructor(readonly attributes: Attributes) {}
}

/**
 * Native histogram resolution (Prometheus "schema"): bucket i holds values in
 * (2^((i-1)/8), 2^(i/8)], so each bucket is 9 % wider than the one below and a
 * quantile read from them is off by at most about 4.5 % (client_golang's
 * default bucket factor of 1.1 picks the same schema).
 */
export const NATIVE_SCHEMA = 3;
const NATIVE_PER_OCTAVE = 1 << NATIVE_SCHEMA;
/** Values at or below this count in the zero bucket (client_golang's default, 2^-128). */
export const NATIVE_ZERO_THRESHOLD = 2 ** -128;

/** The native bucket of a value above the zero threshold: the smallest i with value <= 2^(i/8). */
export function nativeBucket(value: number): number {
  const x = Math.log2(value) * NATIVE_PER_OCTAVE;
  // `| 0`: an int32, and never -0.
  let i = Math.ceil(x) | 0;
  // log2 is off by an ulp now and then: near a boundary, the exact test puts a
  // value on it in the bucket below, as Prometheus does.
  if (i - x < 1e-9 || x - (i - 1) < 1e-9) {
    if (value <= 2 ** ((i - 1) / NATIVE_PER_OCTAVE)) i--;
    else if (value > 2 ** (i / NATIVE_PER_OCTAVE)) i++;
  }
  return i;
}

/** A native histogram's positive buckets: `counts[k]` holds bucket `low + k`, grown as values arrive. */
export class NativeBuckets {
  counts: number[] = [];
  low = 0;
  zeroCount = 0;

  record(value: number): void {
    if (!(value > NATIVE_ZERO_THRESHOLD)) {
      this.zeroCount++;
      return;
    }
    this.addAt(nativeBucket(value), 1);
  }

  /** Adds `other`'s counts to these (a series kept in parts, folded for a scrape). */
  add(other: NativeBuckets): void {
    this.zeroCount += other.zeroCount;
    const counts = other.counts;
    for (let k = 0; k < counts.length; k++) if (counts[k]! > 0) this.addAt(other.low + k, counts[k]!);
  }

  /** Back to no value at all. */
  clear(): void {
    this.counts = [];
    this.low = 0;
    this.zeroCount = 0;
  }

  private addAt(i: number, n: number): void {
    const counts = this.counts;
    if (counts.length === 0) {
      this.low = i;
      counts.push(n);
    } else if (i < this.low) {
      this.counts = [n, ...new Array<number>(this.low - i - 1).fill(0), ...counts];
      this.low = i;
    } else if (i - this.low < counts.length) {
      counts[i - this.low]! += n;
    } else {
      while (counts.length < i - this.low) counts.push(0);
      counts.push(n);
    }
  }
}

/** A classic bucket histogram: `counts[i]` holds values <= `boundaries[i]` (and above the previous one); the last, the rest. */
export class HistogramCell {
  readonly counts: number[];
  sum = 0;
  count = 0;
  /** `{labels}` and `{labels,le="` rendered on the first scrape. */
  braces: string | undefined;
  bucketPrefix: string | undefined;
  /** Only histograms offered exemplars (call latency, with tracing on) allocate them. */
  exemplars: BucketExemplars | undefined;
  /**
   * Cells that split this series by attributes the exposition does not carry
   * (the call latency by status, for OTLP: metrics/call-recorder.ts); values are
   * recorded in them, and this cell is their sum, folded when rendered.
   */
  parts: HistogramCell[] | undefined;
  /** The same values in exponential buckets, kept only when OTLP is asked for them (exponential-buckets.ts). */
  exponential: ExponentialBuckets | undefined;
  /**
   * The lines of the last scrape, Prometheus and OpenMetrics, each kept while
   * `count` is the one they were rendered at (every record changes it; a new
   * exemplar drops the OpenMetrics lines).
   */
  text: string | undefined;
  textCount = -1;
  openMetricsText: string | undefined;
  openMetricsTextCount = -1;
  /** With --histograms native or both, in the families that have them: the same values in native buckets. */
  readonly native: NativeBuckets | undefined;

  constructor(readonly attributes: Attributes, private readonly boundaries: readonly number[], native = false) {
    this.counts = new Array<number>(boundaries.length + 1).fill(0);
    this.native = native ? new NativeBuckets() : undefined;
  }

  /** Counts `value`; returns the index of its bucket, for an exemplar. */
  record(value: number): number {
    const b = this.boundaries;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
    this.exponential?.record(value);
    this.native?.record(value);
    return i;
  }

  /** Whether bucket `bucket` takes a new exemplar at `unixMs`: none yet, or its last is EXEMPLAR_INTERVAL_MS old. */
  exemplarDue(bucket: number, unixMs: number): boolean {
    const e = this.exemplars;
    return e === undefined || unixMs - e.times[bucket]! >= EXEMPLAR_INTERVAL_MS;
  }

  /** Sets this cell to the sum of its parts, each bucket's exemplar the newest of theirs. */
  fold(): void {
    const parts = this.parts!;
    const counts = this.counts;
    counts.fill(0);
    let sum = 0;
    let count = 0;
    for (const p of parts) {
      for (let i = 0; i < counts.length; i++) counts[i]! += p.counts[i]!;
      sum += p.sum;
      count += p.count;
      const e = p.exemplars;
      if (e === undefined) continue;
      for (let i = 0; i < counts.length; i++) {
        if (e.traceIds[i] !== '' && e.times[i]! > (this.exemplars?.times[i] ?? -Infinity)) this.setExemplar(i, e.traceIds[i]!, e.spanIds[i]!, e.values[i]!, e.times[i]!);
      }
    }
    this.sum = sum;
    this.count = count;
    const native = this.native;
    if (native === undefined) return;
    native.clear();
    for (const p of parts) if (p.native !== undefined) native.add(p.native);
  }

  setExemplar(bucket: number, traceId: string, spanId: string, value: number, unixMs: number): void {
    const e = (this.exemplars ??= new BucketExemplars(this.counts.length));
    e.traceIds[bucket] = traceId;
    e.spanIds[bucket] = spanId;
    e.values[bucket] = value;
    e.times[bucket] = unixMs;
    this.openMetricsText = undefined;
  }
}

/** Where a family's exposition goes, a piece at a time (a string, or the bytes of a scrape). */
export interface ExpositionSink {
  add(text: string): void;
}

/** Collects the pieces into one string. */
export class TextSink implements ExpositionSink {
  text = '';
  add(text: string): void {
    this.text += text;
  }
}

/** One metric: its name, and every cell bound for it so far, in the order they were first seen. */
abstract class Family<C> {
  readonly cells: C[] = [];
  /** Cells before this index have their label text rendered (prepareLabels). */
  private prepared = 0;
  constructor(readonly name: string, readonly description: string) {}
  /** The family's exposition text, Prometheus or OpenMetrics; empty while it has no cell. */
  render(openMetrics = false): string {
    const sink = new TextSink();
    this.renderTo(sink, openMetrics);
    return sink.text;
  }
  /**
   * The same, a piece at a time: the header, then each cell's lines, which a
   * cell keeps from one scrape to the next while it has not changed, so that a
   * scrape of quiet methods allocates next to nothing.
   */
  abstract renderTo(sink: ExpositionSink, openMetrics: boolean): void;
  /** Renders one cell's label text, if not yet done. */
  protected abstract prepareCell(cell: C): void;
  /**
   * Renders the label text of cells never scraped, until `deadline`
   * (performance.now()); true once every cell has it. The label text never
   * changes, so a scrape does this in slices before it renders any value, and
   * render() then only concatenates (it still renders what is missing).
   */
  prepareLabels(deadline: number): boolean {
    const cells = this.cells;
    while (this.prepared < cells.length) {
      this.prepareCell(cells[this.prepared++]!);
      if ((this.prepared & 15) === 0 && performance.now() >= deadline) break;
    }
    return this.prepared >= cells.length;
  }
  /** Stops exporting a cell (the series of something that is gone); rare, so a scan is fine. */
  remove(cell: C): void {
    const i = this.cells.indexOf(cell);
    if (i >= 0) this.cells.splice(i, 1);
    if (i >= 0 && i < this.prepared) this.prepared--;
  }
}

export class ValueFamily extends Family<ValueCell> {
  constructor(name: string, description: string, readonly kind: 'counter' | 'gauge') {
    super(name, description);
  }

  cell(attributes: Attributes): ValueCell {
    const c = new ValueCell(attributes);
    this.cells.push(c);
    return c;
  }

  protected prepareCell(c: ValueCell): void {
    c.labels ??= labelText(c.attributes);
  }

  renderTo(sink: ExpositionSink, openMetrics: boolean): void {
    if (this.cells.length === 0) return;
    sink.add(openMetrics ? openMetricsHeader(this.name, this.kind, this.description) : familyHeader(this.name, this.kind, this.description));
    const sample = openMetrics && this.kind === 'counter' ? counterSampleName(this.name) : this.name;
    for (const c of this.cells) {
      if (c.line === undefined || c.lineValue !== c.value || c.lineSample !== sample) {
        c.line = sampleLine(sample, (c.labels ??= labelText(c.attributes)), c.value);
        c.lineValue = c.value;
        c.lineSample = sample;
      }
      sink.add(c.line);
    }
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  /** `0.005"} ` per boundary, then `+Inf"} `: the tail of each bucket line's labels. */
  private readonly leTails: readonly string[];
  /** Whether cells bound from now on keep exponential buckets too (OTLP asked for them); set before any is bound. */
  exponential = false;

  readonly kind = 'histogram';
  /** Whether its cells keep native buckets too (--histograms native or both; the text formats never show them). */
  native = false;

  constructor(name: string, description: string, readonly boundaries: readonly number[]) {
    super(name, description);
    this.leTails = [...boundaries.map((b) => `${sampleValue(b)}"} `), '+Inf"} '];
  }

  cell(attributes: Attributes): HistogramCell {
    const c = new HistogramCell(attributes, this.boundaries, this.native);
    if (this.exponential) c.exponential = new ExponentialBuckets();
    this.cells.push(c);
    return c;
  }

  /** A part of `cell` (HistogramCell.parts): its `attributes` are added to the cell's where the series is exported by them. */
  part(cell: HistogramCell, attributes: Attributes): HistogramCell {
    const p = new HistogramCell(attributes, this.boundaries, this.native);
    if (this.exponential) p.exponential = new ExponentialBuckets();
    (cell.parts ??= []).push(p);
    return p;
  }

  protected prepareCell(c: HistogramCell): void {
    if (c.braces !== undefined) return;
    const l = labelText(c.attributes);
    c.braces = l === '' ? '' : `{${l}}`;
    c.bucketPrefix = `${this.name}_bucket{${l === '' ? '' : `${l},`}le="`;
  }

  renderTo(sink: ExpositionSink, openMetrics: boolean): void {
    if (this.cells.length === 0) return;
    const name = this.name;
    sink.add(openMetrics ? openMetricsHeader(name, 'histogram', this.description) : familyHeader(name, 'histogram', this.description));
    for (const c of this.cells) {
      if (c.parts !== undefined) c.fold();
      if (openMetrics ? c.openMetricsTextCount === c.count && c.openMetricsText !== undefined : c.textCount === c.count && c.text !== undefined) {
        sink.add(openMetrics ? c.openMetricsText! : c.text!);
        continue;
      }
      const text = this.cellText(c, openMetrics);
      if (openMetrics) {
        c.openMetricsText = text;
        c.openMetricsTextCount = c.count;
      } else {
        c.text = text;
        c.textCount = c.count;
      }
      sink.add(text);
    }
  }

  /** One cell's lines: _count, _sum and the cumulative buckets (Prometheus), or the buckets with their exemplars first (OpenMetrics). */
  private cellText(c: HistogramCell, openMetrics: boolean): string {
    const name = this.name;
    let out = '';
    if (c.braces === undefined) this.prepareCell(c);
    const totals = `${name}_count${c.braces} ${c.count}\n${name}_sum${c.braces} ${sampleValue(c.sum)}\n`;
    // The Prometheus layout is the one the exporter had; OpenMetrics's examples put the buckets first.
    if (!openMetrics) out += totals;
    let cumulative = 0;
    const counts = c.counts;
    const e = openMetrics ? c.exemplars : undefined;
    for (let i = 0; i < counts.length; i++) {
      cumulative += counts[i]!;
      out += `${c.bucketPrefix}${this.leTails[i]}${cumulative}`;
      if (e !== undefined && e.traceIds[i] !== '') out += exemplarSuffix(e.traceIds[i]!, e.spanIds[i]!, e.values[i]!, e.times[i]!);
      out += '\n';
    }
    if (openMetrics) out += totals;
    return out;
  }
}

export type MetricFamily = ValueFamily | HistogramFamily;
