// An OTLP metrics export request, and its two wire forms: protobuf
// (http/protobuf) and JSON (http/json). The model is written in OTLP/JSON's
// shape (lowerCamelCase, 64-bit integers as decimal strings, enums as numbers),
// so http/json is JSON.stringify; the protobuf form is written field by field
// with protobufjs's Writer, the field numbers those of opentelemetry-proto
// v1 (opentelemetry/proto/metrics/v1/metrics.proto, common/v1, resource/v1,
// collector/metrics/v1/metrics_service.proto).
// https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding
import protobuf from 'protobufjs';

export interface KeyValue {
  key: string;
  /** int64 as a decimal string, as OTLP/JSON writes it. */
  value: { stringValue: string } | { intValue: string };
}

export interface NumberDataPoint {
  attributes: KeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  asDouble: number;
}

export interface HistogramDataPoint {
  attributes: KeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum: number;
  bucketCounts: string[];
  explicitBounds: number[];
}

/** A base-2 exponential histogram's point; only positive buckets (the sidecar records no negative value). */
export interface ExponentialHistogramDataPoint {
  attributes: KeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum: number;
  scale: number;
  zeroCount: string;
  positive: { offset: number; bucketCounts: string[] };
}

/** AggregationTemporality. */
export const DELTA = 1;
export const CUMULATIVE = 2;

export type OtlpMetric =
  | { name: string; description: string; unit: string; gauge: { dataPoints: NumberDataPoint[] } }
  | { name: string; description: string; unit: string; sum: { dataPoints: NumberDataPoint[]; aggregationTemporality: number; isMonotonic: boolean } }
  | { name: string; description: string; unit: string; histogram: { dataPoints: HistogramDataPoint[]; aggregationTemporality: number } }
  | { name: string; description: string; unit: string; exponentialHistogram: { dataPoints: ExponentialHistogramDataPoint[]; aggregationTemporality: number } };

export interface ExportMetricsServiceRequest {
  resourceMetrics: {
    resource: { attributes: KeyValue[] };
    scopeMetrics: { scope: { name: string; version: string }; metrics: OtlpMetric[] }[];
  }[];
}

/** Whole numbers (`server.port`) as int values, anything else as its string. */
export function stringAttributes(attributes: Readonly<Record<string, unknown>>): KeyValue[] {
  const out: KeyValue[] = [];
  for (const key in attributes) {
    const v = attributes[key];
    out.push({ key, value: typeof v === 'number' && Number.isSafeInteger(v) ? { intValue: String(v) } : { stringValue: String(v) } });
  }
  return out;
}

export function encodeJson(request: ExportMetricsServiceRequest): Buffer {
  return Buffer.from(JSON.stringify(request));
}

type Writer = protobuf.Writer;

/** Length-delimited field `field` holding what `write` writes. */
function message(w: Writer, field: number, write: (w: Writer) => void): void {
  w.uint32((field << 3) | 2).fork();
  write(w);
  w.ldelim();
}

function string(w: Writer, field: number, value: string): void {
  if (value !== '') w.uint32((field << 3) | 2).string(value);
}

/** A fixed64 from a decimal string: nanoseconds since 1970 are past 2^53, so never through a double. */
function fixed64(w: Writer, field: number, decimal: string): void {
  const n = BigInt(decimal);
  w.uint32((field << 3) | 1).fixed64({ low: Number(n & 0xffffffffn), high: Number(n >> 32n), unsigned: true } as unknown as number);
}

function keyValues(w: Writer, field: number, attributes: readonly KeyValue[]): void {
  for (const kv of attributes) {
    message(w, field, (w) => {
      string(w, 1, kv.key);
      // AnyValue's fields are a oneof: written even when empty or zero.
      const v = kv.value;
      message(w, 2, (w) => ('intValue' in v ? w.uint32(3 << 3).int64(Number(v.intValue)) : w.uint32((1 << 3) | 2).string(v.stringValue)));
    });
  }
}

function numberPoint(w: Writer, p: NumberDataPoint): void {
  fixed64(w, 2, p.startTimeUnixNano);
  fixed64(w, 3, p.timeUnixNano);
  w.uint32((4 << 3) | 1).double(p.asDouble);
  keyValues(w, 7, p.attributes);
}

function histogramPoint(w: Writer, p: HistogramDataPoint): void {
  fixed64(w, 2, p.startTimeUnixNano);
  fixed64(w, 3, p.timeUnixNano);
  fixed64(w, 4, p.count);
  w.uint32((5 << 3) | 1).double(p.sum);
  message(w, 6, (w) => {
    for (const c of p.bucketCounts) w.fixed64(Number(c));
  });
  if (p.explicitBounds.length > 0) {
    message(w, 7, (w) => {
      for (const b of p.explicitBounds) w.double(b);
    });
  }
  keyValues(w, 9, p.attributes);
}

function exponentialPoint(w: Writer, p: ExponentialHistogramDataPoint): void {
  keyValues(w, 1, p.attributes);
  fixed64(w, 2, p.startTimeUnixNano);
  fixed64(w, 3, p.timeUnixNano);
  fixed64(w, 4, p.count);
  w.uint32((5 << 3) | 1).double(p.sum);
  if (p.scale !== 0) w.uint32(6 << 3).sint32(p.scale);
  fixed64(w, 7, p.zeroCount);
  message(w, 8, (w) => {
    if (p.positive.offset !== 0) w.uint32(1 << 3).sint32(p.positive.offset);
    if (p.positive.bucketCounts.length > 0) {
      message(w, 2, (w) => {
        for (const c of p.positive.bucketCounts) w.uint64(Number(c));
      });
    }
  });
}

function metric(w: Writer, m: OtlpMetric): void {
  string(w, 1, m.name);
  string(w, 2, m.description);
  string(w, 3, m.unit);
  if ('gauge' in m) {
    message(w, 5, (w) => {
      for (const p of m.gauge.dataPoints) message(w, 1, (w) => numberPoint(w, p));
    });
  } else if ('sum' in m) {
    message(w, 7, (w) => {
      for (const p of m.sum.dataPoints) message(w, 1, (w) => numberPoint(w, p));
      w.uint32(2 << 3).int32(m.sum.aggregationTemporality);
      if (m.sum.isMonotonic) w.uint32(3 << 3).bool(true);
    });
  } else if ('histogram' in m) {
    message(w, 9, (w) => {
      for (const p of m.histogram.dataPoints) message(w, 1, (w) => histogramPoint(w, p));
      w.uint32(2 << 3).int32(m.histogram.aggregationTemporality);
    });
  } else {
    message(w, 10, (w) => {
      for (const p of m.exponentialHistogram.dataPoints) message(w, 1, (w) => exponentialPoint(w, p));
      w.uint32(2 << 3).int32(m.exponentialHistogram.aggregationTemporality);
    });
  }
}

export function encodeProtobuf(request: ExportMetricsServiceRequest): Uint8Array {
  const w = protobuf.Writer.create();
  for (const rm of request.resourceMetrics) {
    message(w, 1, (w) => {
      message(w, 1, (w) => keyValues(w, 1, rm.resource.attributes));
      for (const sm of rm.scopeMetrics) {
        message(w, 2, (w) => {
          message(w, 1, (w) => {
            string(w, 1, sm.scope.name);
            string(w, 2, sm.scope.version);
          });
          for (const m of sm.metrics) message(w, 2, (w) => metric(w, m));
        });
      }
    });
  }
  return w.finish();
}
