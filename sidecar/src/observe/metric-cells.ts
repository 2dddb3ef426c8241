// Metric cells aggregated by the sidecar itself. OpenTelemetry's synchronous
// instruments hash their attributes on every `record()` (a sort and a
// JSON.stringify, ~2.4 µs); here each label set is bound to a cell once, when
// first seen, after which an observation is a field increment. A scrape renders
// the cells as Prometheus text (prometheus-text.ts), each cell's label text
// rendered once, on its first scrape.
import type { Attributes } from '@opentelemetry/api';
import { familyHeader, labelText, sampleLine, sampleValue } from './prometheus-text.ts';

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

  constructor(readonly attributes: Attributes, private readonly boundaries: readonly number[]) {
    this.counts = new Array<number>(boundaries.length + 1).fill(0);
  }

  record(value: number): void {
    const b = this.boundaries;
    let i = 0;
    while (i < b.length && value > b[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** One metric: its name, and every cell bound for it so far, in the order they were first seen. */
abstract class Family<C> {
  readonly cells: C[] = [];
  constructor(readonly name: string, readonly description: string) {}
  /** The family's exposition text; empty while it has no cell. */
  abstract render(): string;
}

export class ValueFamily extends Family<ValueCell> {
  constructor(name: string, description: string, private readonly kind: 'counter' | 'gauge') {
    super(name, description);
  }

  cell(attributes: Attributes): ValueCell {
    const c = new ValueCell(attributes);
    this.cells.push(c);
    return c;
  }

  render(): string {
    if (this.cells.length === 0) return '';
    let out = familyHeader(this.name, this.kind, this.description);
    for (const c of this.cells) out += sampleLine(this.name, (c.labels ??= labelText(c.attributes)), c.value);
    return out;
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  /** `0.005"} ` per boundary, then `+Inf"} `: the tail of each bucket line's labels. */
  private readonly leTails: readonly string[];

  constructor(name: string, description: string, readonly boundaries: readonly number[]) {
    super(name, description);
    this.leTails = [...boundaries.map((b) => `${sampleValue(b)}"} `), '+Inf"} '];
  }

  cell(attributes: Attributes): HistogramCell {
    const c = new HistogramCell(attributes, this.boundaries);
    this.cells.push(c);
    return c;
  }

  render(): string {
    if (this.cells.length === 0) return '';
    const name = this.name;
    let out = familyHeader(name, 'histogram', this.description);
    for (const c of this.cells) {
      if (c.braces === undefined) {
        const l = labelText(c.attributes);
        c.braces = l === '' ? '' : `{${l}}`;
        c.bucketPrefix = `${name}_bucket{${l === '' ? '' : `${l},`}le="`;
      }
      out += `${name}_count${c.braces} ${c.count}\n${name}_sum${c.braces} ${sampleValue(c.sum)}\n`;
      let cumulative = 0;
      const counts = c.counts;
      for (let i = 0; i < counts.length; i++) {
        cumulative += counts[i]!;
        out += `${c.bucketPrefix}${this.leTails[i]}${cumulative}\n`;
      }
    }
    return out;
  }
}

export type MetricFamily = ValueFamily | HistogramFamily;
