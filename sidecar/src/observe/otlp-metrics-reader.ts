// Reads the metric cells the sidecar already keeps for /metrics and writes them
// as OTLP metrics, at export time only: a call costs the same with OTLP on.
//
// - The call latency histogram becomes the semantic-convention instruments
//   (https://opentelemetry.io/docs/specs/semconv/rpc/rpc-metrics/,
//   https://opentelemetry.io/docs/specs/semconv/http/http-metrics/):
//   `rpc.server.call.duration` / `rpc.client.call.duration` for the gRPC family,
//   Connect and tRPC, `http.server.request.duration` / `http.client.request.duration`
//   for REST, by the call's direction (inbound: the sidecar stands for the server).
//   Each point carries the call's status, `rpc.status_code` (the gRPC code's
//   name) or `http.response.status_code`, read from the parts the recorder keeps
//   by status whatever the detail level (metrics/call-recorder.ts). Cells that
//   differ only in what the conventions do not name (the encoding, the
//   operation, grpc vs grpc_web, a gRPC call's HTTP status) are added together
//   into one point.
// - Every other family keeps its labels under an `rpcscope.` name: `rpcscope_X_total`
//   is the counter `rpcscope.X`, `rpcscope_X_seconds` the histogram `rpcscope.X` in
//   `s`, so that a Collector's Prometheus exporter gives back the /metrics names.
//
// Histograms are explicit-bucket with the sidecar's own boundaries, or, when
// OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION asks for
// base2_exponential_bucket_histogram, exponential from the buckets each cell then
// keeps beside its explicit ones (exponential-buckets.ts): bucket counts cannot
// be turned into exponential ones. With delta temporality an exponential
// histogram starts over after each export, at scale 20, as the SDKs' does.
import type { Attributes } from '@opentelemetry/api';
import { HistogramFamily, type HistogramCell, type MetricFamily, type ValueCell, ValueFamily } from './metric-cells.ts';
import type { ExponentialBuckets } from './exponential-buckets.ts';
import { CUMULATIVE, DELTA, stringAttributes, type ExponentialHistogramDataPoint, type HistogramDataPoint, type KeyValue, type NumberDataPoint, type OtlpMetric } from './otlp-metrics-encoding.ts';
import type { Temporality } from './otlp-metrics-settings.ts';
import { RPC_SYSTEM } from './rpc-system.ts';


const DURATION_DESCRIPTION = {
  rpc: 'Duration of unary-shaped RPCs, from request headers received to response end sent, as the rpcscope sidecar saw them.',
  http: 'Duration of HTTP requests, from request headers received to response end sent, as the rpcscope sidecar saw them.',
};

/**
 * What the conventions ask of every call of a sidecar, which its settings say
 * once: the scheme its listener takes calls in (inbound), and the service every
 * outbound call goes to (--upstream), the client instruments' `server.address`
 * and `server.port`.
 */
export interface SidecarPeers {
  inboundScheme: 'http' | 'https';
  outbound: { scheme: 'http' | 'https'; address: string; port: number } | undefined;
}

/** The semantic-convention instrument and attributes of one rpcscope_call_duration_seconds cell. */
function conventionOf(a: Attributes, peers: SidecarPeers): { name: string; attributes: Record<string, string | number> } {
  const outbound = a.direction === 'outbound' ? peers.outbound : undefined;
  const side = a.direction === 'outbound' ? 'client' : 'server';
  const server: Record<string, string | number> = outbound ? { 'server.address': outbound.address, 'server.port': outbound.port } : {};
  const method = String(a.method);
  if (a.protocol === 'rest') {
    // `GET /v1/orders/{id}`; `_OTHER` past --max-methods.
    const space = method.indexOf(' ');
    const request: Record<string, string> = space > 0 ? { 'http.request.method': method.slice(0, space), 'http.route': method.slice(space + 1) } : { 'http.request.method': '_OTHER' };
    const scheme = a.direction === 'outbound' ? outbound?.scheme : peers.inboundScheme;
    // None when the call ended without an answer (a reset, a client gone).
    const status: Record<string, number> = typeof a.http_status === 'number' && a.http_status > 0 ? { 'http.response.status_code': a.http_status } : {};
    return { name: `http.${side}.request.duration`, attributes: { ...request, ...status, ...(scheme ? { 'url.scheme': scheme } : {}), ...server } };
  }
  const attributes: Record<string, string | number> = { 'rpc.system.name': RPC_SYSTEM[a.protocol as keyof typeof RPC_SYSTEM] ?? String(a.protocol), 'rpc.method': method };
  if (a.code !== undefined) attributes['rpc.status_code'] = String(a.code);
  return { name: `rpc.${side}.call.duration`, attributes: { ...attributes, ...server } };
}

/** `rpcscope_stream_resets_total` -> `rpcscope.stream_resets`; the unit from the suffix. */
export function otlpName(prometheusName: string, counter: boolean): { name: string; unit: string } {
  let rest = prometheusName.replace(/^rpcscope_/, '');
  if (counter) rest = rest.replace(/_total$/, '');
  let unit = '';
  if (rest.endsWith('_seconds')) {
    rest = rest.slice(0, -'_seconds'.length);
    unit = 's';
  } else if (rest.endsWith('_bytes')) unit = 'By';
  else if (rest.endsWith('_ratio')) unit = '1';
  return { name: `rpcscope.${rest}`, unit };
}

/** The semantic-convention point a latency cell is part of. */
interface ConventionPoint {
  name: string;
  /** The attributes as a Map key: cells that agree on them are one point. */
  key: string;
  kv: KeyValue[];
}

/** What a delta export subtracts: each cell's values at the previous export. */
interface Previous {
  value: number;
  count: number;
  sum: number;
  counts: number[];
}

export class OtlpMetricsReader {
  private readonly previous = new WeakMap<ValueCell | HistogramCell, Previous>();
  private readonly conventionPoints = new WeakMap<HistogramCell, ConventionPoint>();
  /** Unix ms: the start of every cumulative series, and of the first delta. */
  private lastExport: number;

  constructor(
    private readonly temporality: Temporality,
    private readonly startMs: number,
    /** rpcscope_call_duration_seconds: read as the semantic-convention instruments. */
    private readonly callDuration: HistogramFamily,
    private readonly peers: SidecarPeers = { inboundScheme: 'http', outbound: undefined },
  ) {
    this.lastExport = startMs;
  }

  /** Every family's cells as OTLP metrics at `nowMs`. */
  read(families: readonly MetricFamily[], nowMs: number): OtlpMetric[] {
    const delta = this.temporality === 'delta';
    const start = nanos(delta ? this.lastExport : this.startMs);
    const now = nanos(nowMs);
    this.lastExport = nowMs;
    const metrics: OtlpMetric[] = [];
    for (const family of families) {
      if (family.cells.length === 0) continue;
      if (family === this.callDuration) metrics.push(...this.conventions(family, start, now));
      else if (family instanceof HistogramFamily) metrics.push(this.histogram(family, start, now));
      else metrics.push(this.value(family, start, now));
    }
    return metrics;
  }

  private value(family: ValueFamily, start: string, now: string): OtlpMetric {
    const counter = family.kind === 'counter';
    const { name, unit } = otlpName(family.name, counter);
    const points: NumberDataPoint[] = [];
    for (const c of family.cells) {
      let v = c.value;
      if (counter && this.temporality === 'delta') {
        const p = this.previousOf(c);
        v = c.value - p.value;
        p.value = c.value;
      }
      points.push({ attributes: stringAttributes(c.attributes), startTimeUnixNano: start, timeUnixNano: now, asDouble: v });
    }
    if (!counter) return { name, description: family.description, unit, gauge: { dataPoints: points.map((p) => ({ ...p, startTimeUnixNano: now })) } };
    return { name, description: family.description, unit, sum: { dataPoints: points, aggregationTemporality: this.temporality === 'delta' ? DELTA : CUMULATIVE, isMonotonic: true } };
  }

  private histogram(family: HistogramFamily, start: string, now: string): OtlpMetric {
    const { name, unit } = otlpName(family.name, false);
    if (family.exponential) {
      const points = family.cells.flatMap((c) => (c.exponential === undefined ? [] : [this.exponentialPoint(this.take(c.exponential), stringAttributes(c.attributes), start, now)]));
      return { name, description: family.description, unit, exponentialHistogram: { dataPoints: points, aggregationTemporality: this.temporality === 'delta' ? DELTA : CUMULATIVE } };
    }
    const points = family.cells.map((c) => this.point(c, stringAttributes(c.attributes), family.boundaries, start, now));
    return { name, description: family.description, unit, histogram: { dataPoints: points, aggregationTemporality: this.temporality === 'delta' ? DELTA : CUMULATIVE } };
  }

  private conventions(family: HistogramFamily, start: string, now: string): OtlpMetric[] {
    // The recorder keeps each series's latency by status in its parts (metrics/call-recorder.ts).
    const cells: { c: HistogramCell; point: ConventionPoint }[] = [];
    for (const series of family.cells) {
      for (const c of series.parts ?? [series]) {
        // A cell's attributes never change: its point's name, attributes and key are worked out once.
        let point = this.conventionPoints.get(c);
        if (point === undefined) {
          const { name, attributes } = conventionOf(c === series ? c.attributes : { ...series.attributes, ...c.attributes }, this.peers);
          this.conventionPoints.set(c, (point = { name, key: JSON.stringify(attributes), kv: stringAttributes(attributes) }));
        }
        cells.push({ c, point });
      }
    }
    const temporality = this.temporality === 'delta' ? DELTA : CUMULATIVE;
    const description = (name: string): string => (name.startsWith('rpc.') ? DURATION_DESCRIPTION.rpc : DURATION_DESCRIPTION.http);
    if (family.exponential) {
      const byName = new Map<string, Map<string, { kv: KeyValue[]; buckets: ExponentialBuckets }>>();
      for (const { c, point: { name, key, kv } } of cells) {
        if (c.exponential === undefined) continue;
        let points = byName.get(name);
        if (points === undefined) byName.set(name, (points = new Map()));
        const buckets = this.take(c.exponential);
        const same = points.get(key);
        if (same === undefined) points.set(key, { kv, buckets });
        else same.buckets.merge(buckets);
      }
      return [...byName].map(([name, points]) => ({
        name,
        description: description(name),
        unit: 's',
        exponentialHistogram: { dataPoints: [...points.values()].map((p) => this.exponentialPoint(p.buckets, p.kv, start, now)), aggregationTemporality: temporality },
      }));
    }
    const byName = new Map<string, Map<string, HistogramDataPoint>>();
    for (const { c, point: { name, key, kv } } of cells) {
      let points = byName.get(name);
      if (points === undefined) byName.set(name, (points = new Map()));
      const point = this.point(c, kv, family.boundaries, start, now);
      const same = points.get(key);
      if (same === undefined) {
        points.set(key, point);
        continue;
      }
      same.count = String(Number(same.count) + Number(point.count));
      same.sum += point.sum;
      same.bucketCounts = same.bucketCounts.map((n, i) => String(Number(n) + Number(point.bucketCounts[i])));
    }
    return [...byName].map(([name, points]) => ({
      name,
      description: description(name),
      unit: 's',
      histogram: { dataPoints: [...points.values()], aggregationTemporality: temporality },
    }));
  }

  /** A copy of a cell's exponential buckets to export; with delta temporality the cell's start over. */
  private take(buckets: ExponentialBuckets): ExponentialBuckets {
    const copy = buckets.copy();
    if (this.temporality === 'delta') buckets.reset();
    return copy;
  }

  private exponentialPoint(b: ExponentialBuckets, attributes: KeyValue[], start: string, now: string): ExponentialHistogramDataPoint {
    return { attributes, startTimeUnixNano: start, timeUnixNano: now, count: String(b.count), sum: b.sum, scale: b.scale, zeroCount: String(b.zeroCount), positive: { offset: b.offset, bucketCounts: b.counts.map(String) } };
  }

  /** A histogram cell's point; cumulative, or what changed since the previous export. */
  private point(c: HistogramCell, attributes: HistogramDataPoint['attributes'], bounds: readonly number[], start: string, now: string): HistogramDataPoint {
    let counts = c.counts;
    let count = c.count;
    let sum = c.sum;
    if (this.temporality === 'delta') {
      const p = this.previousOf(c);
      counts = c.counts.map((n, i) => n - (p.counts[i] ?? 0));
      count = c.count - p.count;
      sum = c.sum - p.sum;
      p.counts = [...c.counts];
      p.count = c.count;
      p.sum = c.sum;
    }
    return { attributes, startTimeUnixNano: start, timeUnixNano: now, count: String(count), sum, bucketCounts: counts.map(String), explicitBounds: [...bounds] };
  }

  private previousOf(c: ValueCell | HistogramCell): Previous {
    let p = this.previous.get(c);
    if (p === undefined) this.previous.set(c, (p = { value: 0, count: 0, sum: 0, counts: [] }));
    return p;
  }
}

function nanos(ms: number): string {
  return String(BigInt(Math.round(ms * 1000)) * 1000n);
}
