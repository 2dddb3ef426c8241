// Metric cells aggregated by the sidecar itself. OpenTelemetry's synchronous
// instruments hash their attributes on every `record()` (a sort and a
// JSON.stringify, ~2.4 µs); here each label set is bound to a cell once, when
// first seen, after which an observation is a field increment. A scrape renders
// the cells as Prometheus text (prometheus-text.ts) or, when asked, OpenMetrics
// text (openmetrics-text.ts), each cell's label text rendered once, on its first
// scrape.
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
  constructor(readonly attributes: Attributes) {}
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

  constructor(readonly attributes: Attributes, private readonly boundaries: readonly number[]) {
    this.counts = new Array<number>(boundaries.length + 1).fill(0);
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
  }

  setExemplar(bucket: number, traceId: string, spanId: string, value: number, unixMs: number): void {
    const e = (this.exemplars ??= new BucketExemplars(this.counts.length));
    e.traceIds[bucket] = traceId;
    e.spanIds[bucket] = spanId;
    e.values[bucket] = value;
    e.times[bucket] = unixMs;
  }
}

/** One metric: its name, and every cell bound for it so far, in the order they were first seen. */
abstract class Family<C> {
  readonly cells: C[] = [];
  constructor(readonly name: string, readonly description: string) {}
  /** The family's exposition text, Prometheus or OpenMetrics; empty while it has no cell. */
  abstract render(openMetrics?: boolean): string;
  /** Stops exporting a cell (the series of something that is gone); rare, so a scan is fine. */
  remove(cell: C): void {
    const i = this.cells.indexOf(cell);
    if (i >= 0) this.cells.splice(i, 1);
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

  render(openMetrics = false): string {
    if (this.cells.length === 0) return '';
    let out = openMetrics ? openMetricsHeader(this.name, this.kind, this.description) : familyHeader(this.name, this.kind, this.description);
    const sample = openMetrics && this.kind === 'counter' ? counterSampleName(this.name) : this.name;
    for (const c of this.cells) out += sampleLine(sample, (c.labels ??= labelText(c.attributes)), c.value);
    return out;
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  /** `0.005"} ` per boundary, then `+Inf"} `: the tail of each bucket line's labels. */
  private readonly leTails: readonly string[];
  /** Whether cells bound from now on keep exponential buckets too (OTLP asked for them); set before any is bound. */
  exponential = false;

  constructor(name: string, description: string, readonly boundaries: readonly number[]) {
    super(name, description);
    this.leTails = [...boundaries.map((b) => `${sampleValue(b)}"} `), '+Inf"} '];
  }

  cell(attributes: Attributes): HistogramCell {
    const c = new HistogramCell(attributes, this.boundaries);
    if (this.exponential) c.exponential = new ExponentialBuckets();
    this.cells.push(c);
    return c;
  }

  /** A part of `cell` (HistogramCell.parts): its `attributes` are added to the cell's where the series is exported by them. */
  part(cell: HistogramCell, attributes: Attributes): HistogramCell {
    const p = new HistogramCell(attributes, this.boundaries);
    if (this.exponential) p.exponential = new ExponentialBuckets();
    (cell.parts ??= []).push(p);
    return p;
  }

  render(openMetrics = false): string {
    if (this.cells.length === 0) return '';
    const name = this.name;
    let out = openMetrics ? openMetricsHeader(name, 'histogram', this.description) : familyHeader(name, 'histogram', this.description);
    for (const c of this.cells) {
      if (c.parts !== undefined) c.fold();
      if (c.braces === undefined) {
        const l = labelText(c.attributes);
        c.braces = l === '' ? '' : `{${l}}`;
        c.bucketPrefix = `${name}_bucket{${l === '' ? '' : `${l},`}le="`;
      }
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
    }
    return out;
  }
}

export type MetricFamily = ValueFamily | HistogramFamily;
