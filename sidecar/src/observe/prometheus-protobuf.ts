// The Prometheus protobuf exposition (io.prometheus.client.MetricFamily,
// length-delimited), served to a scraper that asks for it when --histograms is
// `native` or `both`: the one format that carries Prometheus native histograms
// (Prometheus 2.40+ with --enable-feature=native-histograms asks for it first).
// Written field by field with protobufjs's Writer, as the OTLP encoder is
// (otlp-metrics-encoding.ts); the field numbers are those of
// prometheus/client_model io/prometheus/client/metrics.proto.
// https://prometheus.io/docs/instrumenting/exposition_formats/#protobuf-format
//
// Counters and gauges are as in the text formats (a counter's family name keeps
// `_total`, as client_golang writes it). A histogram carries its classic
// buckets (cumulative, without +Inf, which the scraper adds from the count),
// or, in the families that keep them (the latency, stream and deadline
// families), a native histogram: schema 3, a zero bucket below 2^-128, and the
// positive buckets as spans and deltas. With `both`, one message carries the
// two, as client_golang's do.
import protobuf from 'protobufjs';
import { NATIVE_SCHEMA, NATIVE_ZERO_THRESHOLD, type HistogramCell, type MetricFamily, type NativeBuckets } from './metric-cells.ts';
import { labelName } from './prometheus-text.ts';

export const PROTOBUF_CONTENT_TYPE = 'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited';

/** Whether an Accept header names the delimited MetricFamily protobuf at a non-zero quality. */
export function acceptsProtobuf(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('application/vnd.google.protobuf')) return false;
  for (const range of accept.split(',')) {
    const r = range.trim();
    if (!r.startsWith('application/vnd.google.protobuf')) continue;
    if (!r.includes('proto=io.prometheus.client.MetricFamily') || !r.includes('encoding=delimited')) continue;
    const q = /;\s*q=([0-9.]+)/.exec(r);
    if (q === null || Number(q[1]) > 0) return true;
  }
  return false;
}

/** MetricType. */
const COUNTER = 0;
const GAUGE = 1;
const HISTOGRAM = 4;

type Writer = protobuf.Writer;

function string(w: Writer, field: number, value: string): void {
  if (value !== '') w.uint32((field << 3) | 2).string(value);
}

function double(w: Writer, field: number, value: number): void {
  w.uint32((field << 3) | 1).double(value);
}

/**
 * A cell's LabelPair messages, encoded on its first protobuf scrape and kept:
 * label text never changes, and encoding it is most of a scrape's work.
 */
const labelPairs = new WeakMap<object, Uint8Array[]>();

function labels(w: Writer, attributes: Readonly<Record<string, unknown>>): void {
  let pairs = labelPairs.get(attributes);
  if (pairs === undefined) {
    pairs = [];
    for (const key in attributes) {
      const v = attributes[key];
      const p = protobuf.Writer.create();
      string(p, 1, labelName(key));
      string(p, 2, typeof v === 'string' ? v : JSON.stringify(v ?? ''));
      pairs.push(p.finish());
    }
    labelPairs.set(attributes, pairs);
  }
  // `bytes` writes a length and the bytes: with the tag before it, the LabelPair field.
  for (const pair of pairs) w.uint32((1 << 3) | 2).bytes(pair);
}

function classicBuckets(w: Writer, cell: HistogramCell, boundaries: readonly number[]): void {
  let cumulative = 0;
  for (let i = 0; i < boundaries.length; i++) {
    cumulative += cell.counts[i]!;
    w.uint32((3 << 3) | 2).fork();
    w.uint32(1 << 3).uint64(cumulative);
    double(w, 2, boundaries[i]!);
    w.ldelim();
  }
}

/** Schema, zero bucket, then the positive buckets: a span for each run of non-empty buckets, and each bucket's count as the change from the one before. */
function nativeBuckets(w: Writer, n: NativeBuckets): void {
  w.uint32(5 << 3).sint32(NATIVE_SCHEMA);
  double(w, 6, NATIVE_ZERO_THRESHOLD);
  if (n.zeroCount > 0) w.uint32(7 << 3).uint64(n.zeroCount);
  const counts = n.counts;
  const deltas: number[] = [];
  let previous = 0;
  /** Index of the bucket after the last span. */
  let end = 0;
  let k = 0;
  while (k < counts.length) {
    if (counts[k] === 0) {
      k++;
      continue;
    }
    let length = 0;
    const start = k;
    while (k < counts.length && counts[k] !== 0) {
      deltas.push(counts[k]! - previous);
      previous = counts[k]!;
      length++;
      k++;
    }
    // BucketSpan: the first's offset is the bucket index, each next one's the gap since the last.
    w.uint32((12 << 3) | 2).fork();
    w.uint32(1 << 3).sint32(deltas.length === length ? n.low + start : start - end);
    w.uint32(2 << 3).uint32(length);
    w.ldelim();
    end = k;
  }
  if (deltas.length > 0) {
    w.uint32((13 << 3) | 2).fork();
    for (const d of deltas) w.sint64(d);
    w.ldelim();
  }
}

/**
 * One family as a length-delimited MetricFamily, appended to `w`; nothing for a
 * family without cells. `classic`: whether histograms with native buckets keep
 * their classic ones too (`both`).
 */
export function writeFamily(w: Writer, family: MetricFamily, classic: boolean): void {
  if (family.cells.length === 0) return;
  w.fork();
  string(w, 1, family.name);
  string(w, 2, family.description);
  if (family.kind === 'histogram') {
    w.uint32(3 << 3).int32(HISTOGRAM);
    for (const cell of family.cells) {
      // A series kept in parts (by status, for OTLP) is their sum, native buckets included.
      if (cell.parts !== undefined) cell.fold();
      w.uint32((4 << 3) | 2).fork();
      labels(w, cell.attributes);
      w.uint32((7 << 3) | 2).fork();
      w.uint32(1 << 3).uint64(cell.count);
      double(w, 2, cell.sum);
      if (cell.native === undefined || classic) classicBuckets(w, cell, family.boundaries);
      if (cell.native !== undefined) nativeBuckets(w, cell.native);
      w.ldelim();
      w.ldelim();
    }
  } else {
    const counter = family.kind === 'counter';
    w.uint32(3 << 3).int32(counter ? COUNTER : GAUGE);
    for (const cell of family.cells) {
      w.uint32((4 << 3) | 2).fork();
      labels(w, cell.attributes);
      // Gauge is field 2 and Counter field 3, each a message with the value as field 1.
      w.uint32(((counter ? 3 : 2) << 3) | 2).fork();
      double(w, 1, cell.value);
      w.ldelim();
      w.ldelim();
    }
  }
  w.ldelim();
}

export function newWriter(): Writer {
  return protobuf.Writer.create();
}
