// Metric cells aggregated by the sidecar itself. OpenTelemetry's synchronous
// instruments hash their attributes on every `record()` (a sort and a
// JSON.stringify, ~2.4 µs); here each label set is bound to a cell once, when
// first seen, after which an observation is a field increment. The cells are
// handed to the exporter as ready-made data points at scrape time.
import { ValueType } from '@opentelemetry/api';
import type { Attributes, HrTime } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType } from '@opentelemetry/sdk-metrics';
import type { MetricData } from '@opentelemetry/sdk-metrics';

/** A counter's or a gauge's current value. */
export class ValueCell {
  value = 0;
  constructor(readonly attributes: Attributes) {}
}

/** A classic bucket histogram: `counts[i]` holds values <= `boundaries[i]` (and above the previous one); the last, the rest. */
export class HistogramCell {
  readonly counts: number[];
  sum = 0;
  count = 0;

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

type Kind = 'counter' | 'gauge' | 'histogram';

/** One metric: its name, and every cell bound for it so far, in the order they were first seen. */
abstract class Family<C> {
  readonly cells: C[] = [];
  constructor(readonly name: string, readonly description: string) {}
  abstract toMetricData(startTime: HrTime, endTime: HrTime): MetricData;
}

export class ValueFamily extends Family<ValueCell> {
  constructor(name: string, description: string, private readonly kind: Exclude<Kind, 'histogram'>) {
    super(name, description);
  }

  cell(attributes: Attributes): ValueCell {
    const c = new ValueCell(attributes);
    this.cells.push(c);
    return c;
  }

  toMetricData(startTime: HrTime, endTime: HrTime): MetricData {
    // The name carries the unit (docs/metrics.md): a descriptor unit would only add an OpenMetrics `# UNIT` line.
    const descriptor = { name: this.name, description: this.description, unit: '', valueType: ValueType.DOUBLE };
    const dataPoints = this.cells.map((c) => ({ startTime, endTime, attributes: c.attributes, value: c.value }));
    if (this.kind === 'gauge') {
      return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.GAUGE, dataPoints };
    }
    return { descriptor, aggregationTemporality: AggregationTemporality.CUMULATIVE, dataPointType: DataPointType.SUM, isMonotonic: true, dataPoints };
  }
}

export class HistogramFamily extends Family<HistogramCell> {
  constructor(name: string, description: string, readonly boundaries: readonly number[]) {
    super(name, description);
  }

  cell(attributes: Attributes): HistogramCell {
    const c = new HistogramCell(attributes, this.boundaries);
    this.cells.push(c);
    return c;
  }

  toMetricData(startTime: HrTime, endTime: HrTime): MetricData {
    const boundaries = [...this.boundaries];
    return {
      descriptor: { name: this.name, description: this.description, unit: '', valueType: ValueType.DOUBLE },
      aggregationTemporality: AggregationTemporality.CUMULATIVE,
      dataPointType: DataPointType.HISTOGRAM,
      dataPoints: this.cells.map((c) => ({
        startTime,
        endTime,
        attributes: c.attributes,
        value: { buckets: { boundaries, counts: [...c.counts] }, sum: c.sum, count: c.count },
      })),
    };
  }
}

export type MetricFamily = ValueFamily | HistogramFamily;

/** Milliseconds since the epoch as OpenTelemetry's [seconds, nanoseconds]. */
export function hrTimeFromMillis(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}
