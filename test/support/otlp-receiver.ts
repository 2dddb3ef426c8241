// A real OTLP/HTTP endpoint for tests: takes the JSON span exports a sidecar
// posts to /v1/traces (OTEL_EXPORTER_OTLP_ENDPOINT) and keeps the spans; takes
// the metric exports posted to /v1/metrics, in protobuf (decoded with the
// opentelemetry-proto definitions in ./opentelemetry-proto) or JSON, and keeps
// each with the headers it came with. `answer: 'never'` makes a receiver that
// reads every request and answers none: a Collector that hangs.
import http from 'node:http';
import https from 'node:https';
import { TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { intValue?: string | number; stringValue?: string } }[];
}

export interface OtlpKeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string | number };
}

export interface OtlpNumberPoint {
  attributes?: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  asDouble?: number;
  asInt?: string | number;
}

export interface OtlpHistogramPoint {
  attributes?: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string | number;
  sum?: number;
  bucketCounts?: (string | number)[];
  explicitBounds?: number[];
}

export interface OtlpExponentialHistogramPoint {
  attributes?: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string | number;
  sum?: number;
  /** Absent when 0 (proto3 defaults are left out). */
  scale?: number;
  zeroCount?: string | number;
  positive?: { offset?: number; bucketCounts?: (string | number)[] };
}

export interface OtlpMetric {
  name: string;
  description?: string;
  unit?: string;
  gauge?: { dataPoints: OtlpNumberPoint[] };
  sum?: { dataPoints: OtlpNumberPoint[]; aggregationTemporality: number; isMonotonic?: boolean };
  histogram?: { dataPoints: OtlpHistogramPoint[]; aggregationTemporality: number };
  exponentialHistogram?: { dataPoints: OtlpExponentialHistogramPoint[]; aggregationTemporality: number };
}

export interface OtlpMetricsRequest {
  resourceMetrics: { resource?: { attributes?: OtlpKeyValue[] }; scopeMetrics: { scope?: { name?: string; version?: string }; metrics: OtlpMetric[] }[] }[];
}

export interface OtlpMetricsExport {
  contentType: string;
  headers: http.IncomingHttpHeaders;
  /** Over TLS, the subject CN of the certificate the client presented, if any. */
  clientCertificate?: string;
  request: OtlpMetricsRequest;
}

export interface OtlpReceiver {
  url: string;
  spans: OtlpSpan[];
  /** The resource of each span export. */
  spanResources: OtlpKeyValue[][];
  /** Metric exports in the order they arrived. */
  metrics: OtlpMetricsExport[];
  /** Requests to /v1/metrics seen, answered or not. */
  metricRequests(): number;
  close(): Promise<void>;
}

const PROTO_DIR = fileURLToPath(new URL('./opentelemetry-proto/', import.meta.url));
let requestType: protobuf.Type | undefined;

/** ExportMetricsServiceRequest from opentelemetry-proto's collector/metrics/v1. */
function exportRequestType(): protobuf.Type {
  if (requestType) return requestType;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => PROTO_DIR + target.replace(/^.*\//, '');
  root.loadSync('metrics_service.proto');
  return (requestType = root.lookupType('opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest'));
}

/** The protobuf body in OTLP/JSON's shape: lowerCamelCase, 64-bit integers as decimal strings, enums as numbers. */
export function decodeMetricsProtobuf(body: Buffer): OtlpMetricsRequest {
  const type = exportRequestType();
  return type.toObject(type.decode(body), { longs: String, enums: Number, defaults: false }) as OtlpMetricsRequest;
}

export interface OtlpReceiverOptions {
  answer?: 'ok' | 'never';
  /**
   * An https:// receiver with this certificate; with `clientCa`, one that asks
   * every client for a certificate and refuses the handshake of any it cannot
   * verify against it (mutual TLS).
   */
  tls?: { cert: Buffer; key: Buffer; clientCa?: Buffer };
}

export async function startOtlpReceiver(opts: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: OtlpSpan[] = [];
  const spanResources: OtlpKeyValue[][] = [];
  const metrics: OtlpMetricsExport[] = [];
  let metricRequests = 0;
  const handler: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('end', () => {
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body.toString()) as { resourceSpans: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) {
          spanResources.push(rs.resource?.attributes ?? []);
          for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
      }
      if (req.url === '/v1/metrics') {
        metricRequests++;
        if (opts.answer === 'never') return;
        const contentType = req.headers['content-type'] ?? '';
        const request = contentType === 'application/json' ? (JSON.parse(body.toString()) as OtlpMetricsRequest) : decodeMetricsProtobuf(body);
        const peer = req.socket instanceof TLSSocket ? req.socket.getPeerCertificate() : undefined;
        metrics.push({ contentType, headers: req.headers, request, ...(peer?.subject ? { clientCertificate: String(peer.subject.CN) } : {}) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  };
  const tls = opts.tls;
  const server = tls
    ? https.createServer({ cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}) }, handler)
    : http.createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    spanResources,
    metrics,
    metricRequests: () => metricRequests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
