// OTLP metrics through the real binary: real gRPC (grpc-js) and REST calls pass a
// sidecar with OTEL_METRICS_EXPORTER=otlp, a real HTTP receiver decodes what it
// pushes with the opentelemetry-proto definitions, and every value it sent must
// equal what /metrics says of the same traffic once the traffic has stopped:
// counts, sums and bucket counts, attribute set by attribute set, inbound and
// outbound (the server and the client instruments). Then the same
// over http/json with delta temporality (the deltas add up to the scrape), the
// resource and headers the OTEL_* variables ask for, and receivers that hang or
// are down: calls go on, and the exports they cost are counted as lost.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { GrpcJsEchoClient, startConnectEcho, type EchoRequestObject, type Upstream } from '@rpcscope/demo';
import { parseExposition, select, sum, type Sample } from '../support/metrics-text.ts';
import { startOtlpReceiver, type OtlpExponentialHistogramPoint, type OtlpHistogramPoint, type OtlpKeyValue, type OtlpMetric, type OtlpMetricsExport, type OtlpReceiver } from '../support/otlp-receiver.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';

type UnaryCallback = (err: grpc.ServiceError | null) => void;
interface GrpcJsEcho extends grpc.Client {
  Echo(req: Partial<EchoRequestObject>, md: grpc.Metadata, opts: grpc.CallOptions, cb: UnaryCallback): grpc.ClientUnaryCall;
}

async function echoClient(url: string): Promise<GrpcJsEcho> {
  const client = new GrpcJsEchoClient(new URL(url).host, grpc.credentials.createInsecure()) as unknown as GrpcJsEcho;
  await new Promise<void>((resolve, reject) => client.waitForReady(Date.now() + 10_000, (err) => (err ? reject(err) : resolve())));
  return client;
}

/** One unary call; resolves with its gRPC status code. */
function echo(client: GrpcJsEcho, req: Partial<EchoRequestObject>): Promise<number> {
  return new Promise((resolve) => client.Echo(req, new grpc.Metadata(), {}, (err) => resolve(err?.code ?? 0)));
}

async function rest(url: string, path: string): Promise<number> {
  const res = await fetch(`${url}${path}`);
  await res.arrayBuffer();
  return res.status;
}

/** The mixed traffic every comparison runs on: gRPC OK and NOT_FOUND, REST 200 and 404. */
async function traffic(sidecar: SidecarProcess, rounds: number): Promise<void> {
  const client = await echoClient(sidecar.url);
  try {
    for (let i = 0; i < rounds; i++) {
      assert.equal(await echo(client, { message: `m${i}` }), 0);
      if (i % 3 === 0) assert.equal(await echo(client, { message: 'missing', failCode: grpc.status.NOT_FOUND }), grpc.status.NOT_FOUND);
      assert.equal(await rest(sidecar.url, `/v1/echo/item-${i}`), 200);
      if (i % 4 === 0) assert.equal(await rest(sidecar.url, '/v1/status/404'), 404);
    }
  } finally {
    client.close();
  }
}

async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Waits for two more exports (the second read the cells after the traffic stopped), then scrapes. */
async function settle(sidecar: SidecarProcess, receiver: OtlpReceiver): Promise<Sample[]> {
  const n = receiver.metrics.length;
  await until('two more exports', () => receiver.metrics.length >= n + 2);
  return parseExposition(await (await fetch(`${sidecar.adminUrl}/metrics`)).text());
}

const attrs = (kvs: readonly OtlpKeyValue[] | undefined): Record<string, string> => Object.fromEntries((kvs ?? []).map((kv) => [kv.key, String(kv.value.stringValue ?? kv.value.intValue)]));
const key = (labels: Record<string, string>): string => JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));

/**
 * The metrics of a run as cumulative values: the last export's, or with delta
 * temporality every export's added up (gauges: the last value).
 */
function accumulate(exports: readonly OtlpMetricsExport[]): Map<string, OtlpMetric> {
  const out = new Map<string, OtlpMetric>();
  for (const e of exports) {
    for (const m of e.request.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((sm) => sm.metrics))) {
      const had = out.get(m.name);
      if (had === undefined || !(m.sum?.aggregationTemporality === 1 || m.histogram?.aggregationTemporality === 1)) {
        out.set(m.name, structuredClone(m));
        continue;
      }
      const points = new Map((had.sum?.dataPoints ?? had.histogram?.dataPoints ?? []).map((p) => [key(attrs(p.attributes)), p]));
      for (const p of m.sum?.dataPoints ?? []) {
        const prev = points.get(key(attrs(p.attributes)));
        if (prev === undefined) had.sum!.dataPoints.push(structuredClone(p));
        else (prev as typeof p).asDouble = (prev as typeof p).asDouble! + p.asDouble!;
      }
      for (const p of m.histogram?.dataPoints ?? []) {
        const prev = points.get(key(attrs(p.attributes))) as OtlpHistogramPoint | undefined;
        if (prev === undefined) {
          had.histogram!.dataPoints.push(structuredClone(p));
          continue;
        }
        prev.count = Number(prev.count) + Number(p.count);
        prev.sum = (prev.sum ?? 0) + (p.sum ?? 0);
        prev.bucketCounts = prev.bucketCounts!.map((c, i) => Number(c) + Number(p.bucketCounts![i]));
      }
    }
  }
  return out;
}

interface HistogramValue {
  count: number;
  sum: number;
  buckets: number[];
}

/** A histogram's series in a scrape by label set (without `le`), buckets de-cumulated. */
function scrapedHistograms(samples: readonly Sample[], name: string, group: (labels: Record<string, string>) => Record<string, string>): Map<string, HistogramValue> {
  const out = new Map<string, HistogramValue & { cumulative: [number, number][] }>();
  const of = (labels: Record<string, string>): HistogramValue & { cumulative: [number, number][] } => {
    const { le: _le, ...rest } = labels;
    const k = key(group(rest));
    let h = out.get(k);
    if (h === undefined) out.set(k, (h = { count: 0, sum: 0, buckets: [], cumulative: [] }));
    return h;
  };
  for (const s of samples) {
    if (s.name === `${name}_count`) of(s.labels).count += s.value;
    if (s.name === `${name}_sum`) of(s.labels).sum += s.value;
  }
  // Bucket lines: added up per group and le, then de-cumulated.
  const byLe = new Map<string, Map<number, number>>();
  for (const s of samples.filter((x) => x.name === `${name}_bucket`)) {
    const { le, ...rest } = s.labels;
    of(s.labels);
    const k = key(group(rest));
    const m = byLe.get(k) ?? new Map<number, number>();
    const bound = le === '+Inf' ? Infinity : Number(le);
    m.set(bound, (m.get(bound) ?? 0) + s.value);
    byLe.set(k, m);
  }
  for (const [k, m] of byLe) {
    const sorted = [...m].sort(([a], [b]) => a - b);
    out.get(k)!.buckets = sorted.map(([, c], i) => c - (i === 0 ? 0 : sorted[i - 1]![1]));
  }
  return new Map([...out].map(([k, { count, sum: s, buckets }]) => [k, { count, sum: s, buckets }]));
}

function otlpHistograms(metric: OtlpMetric | undefined): Map<string, HistogramValue> {
  return new Map((metric?.histogram?.dataPoints ?? []).map((p) => [key(attrs(p.attributes)), { count: Number(p.count), sum: p.sum ?? 0, buckets: (p.bucketCounts ?? []).map(Number) }]));
}

function assertHistogramsEqual(otlp: Map<string, HistogramValue>, scraped: Map<string, HistogramValue>, what: string): void {
  assert.deepEqual([...otlp.keys()].sort(), [...scraped.keys()].sort(), `${what}: attribute sets`);
  for (const [k, want] of scraped) {
    const got = otlp.get(k)!;
    assert.equal(got.count, want.count, `${what} ${k}: count`);
    assert.deepEqual(got.buckets, want.buckets, `${what} ${k}: bucket counts`);
    assert.ok(Math.abs(got.sum - want.sum) <= 1e-9 * Math.max(1, want.sum), `${what} ${k}: sum ${got.sum} != ${want.sum}`);
  }
}

/**
 * The semantic-convention instrument and attributes of a rpcscope_call_duration_seconds
 * series (docs/metrics.md, "OTLP"); `upstream` is the outbound sidecar's --upstream, the
 * service its calls go to. The listeners here are cleartext.
 */
function convention(labels: Record<string, string>, upstream?: URL): Record<string, string> {
  const side = labels.direction === 'outbound' ? 'client' : 'server';
  const server: Record<string, string> = labels.direction === 'outbound' && upstream ? { 'server.address': upstream.hostname, 'server.port': upstream.port } : {};
  if (labels.protocol === 'rest') {
    const [method, route] = labels.method!.split(' ');
    return { instrument: `http.${side}.request.duration`, 'http.request.method': method!, ...(route ? { 'http.route': route } : {}), 'url.scheme': 'http', ...server };
  }
  const system = { grpc: 'grpc', grpc_web: 'grpc', connect: 'connectrpc', trpc: 'trpc' }[labels.protocol!]!;
  return { instrument: `rpc.${side}.call.duration`, 'rpc.system.name': system, 'rpc.method': labels.method!, ...server };
}

/** The exponential points' count and sum added up equal the /metrics histogram series of `labels` added up. */
function assertCountAndSum(points: readonly OtlpExponentialHistogramPoint[], samples: readonly Sample[], name: string, labels: Record<string, string>): void {
  const count = points.reduce((n, p) => n + Number(p.count), 0);
  const total = points.reduce((n, p) => n + (p.sum ?? 0), 0);
  const buckets = points.reduce((n, p) => n + Number(p.zeroCount ?? 0) + (p.positive?.bucketCounts ?? []).reduce<number>((m, c) => m + Number(c), 0), 0);
  const what = `${name} ${key(labels)}`;
  assert.equal(count, sum(samples, `${name}_count`, labels), `${what}: count`);
  assert.equal(buckets, count, `${what}: the buckets hold every value`);
  const want = sum(samples, `${name}_sum`, labels);
  assert.ok(Math.abs(total - want) <= 1e-9 * Math.max(1, want), `${what}: sum ${total} != ${want}`);
}

/**
 * Families /metrics serves that are not pushed (docs/metrics.md, "OTLP"): the build, a
 * resource fact; and the exports' own counter, pushed but moving with every export.
 */
const NOT_PUSHED = new Set(['rpcscope_build_info', 'rpcscope_otlp_exports_total']);

/** Compares every rpcscope.* metric with its /metrics family, value for value, both ways. */
function assertRpcscopeFamiliesEqual(metrics: Map<string, OtlpMetric>, samples: readonly Sample[]): void {
  const promName = (m: OtlpMetric): string => {
    const base = m.name.replace(/^rpcscope\./, 'rpcscope_');
    if (m.sum) return `${base}_total`;
    return m.unit === 's' ? `${base}_seconds` : base;
  };
  const covered = new Set<string>();
  for (const m of metrics.values()) {
    if (!m.name.startsWith('rpcscope.') || m.name === 'rpcscope.otlp_exports') continue;
    const name = promName(m);
    covered.add(name);
    if (m.histogram) {
      assertHistogramsEqual(otlpHistograms(m), scrapedHistograms(samples, name, (l) => l), name);
      continue;
    }
    const points = (m.sum ?? m.gauge)!.dataPoints;
    const scraped = select(samples, name);
    assert.equal(points.length, scraped.length, `${name}: series`);
    for (const p of points) {
      const labels = attrs(p.attributes);
      const want = select(samples, name, labels).filter((s) => Object.keys(s.labels).length === Object.keys(labels).length);
      assert.equal(want.length, 1, `${name} ${key(labels)}: no such series in /metrics`);
      // The skew is computed when read: both reads are over the same 30 s window of calls.
      if (name === 'rpcscope_load_skew_ratio') continue;
      assert.equal(p.asDouble, want[0]!.value, `${name} ${key(labels)}`);
    }
  }
  const histograms = new Set(samples.filter((s) => s.name.endsWith('_bucket')).map((s) => s.name.slice(0, -'_bucket'.length)));
  const scrapedFamilies = new Set(samples.map((s) => {
    const base = s.name.replace(/_(bucket|count|sum)$/, '');
    return histograms.has(base) ? base : s.name;
  }));
  for (const family of scrapedFamilies) {
    if (!family.startsWith('rpcscope_') || family === 'rpcscope_call_duration_seconds' || NOT_PUSHED.has(family)) continue;
    assert.ok(covered.has(family), `${family} is served on /metrics but was not pushed over OTLP`);
  }
}

/** The status attribute of a convention instrument's point. */
const STATUS_ATTRIBUTES = ['rpc.status_code', 'http.response.status_code'];

/**
 * The duration instruments, each point keyed by `instrument` and its attributes;
 * `withStatus: false` adds up the points that differ only by status, which
 * rpcscope_call_duration_seconds does not label at the standard detail level.
 */
function conventionPoints(metrics: Map<string, OtlpMetric>, withStatus: boolean): Map<string, HistogramValue> {
  const otlp = new Map<string, HistogramValue>();
  for (const name of ['rpc.server.call.duration', 'rpc.client.call.duration', 'http.server.request.duration', 'http.client.request.duration']) {
    const m = metrics.get(name);
    if (m === undefined) continue;
    assert.equal(m.unit, 's');
    for (const p of m.histogram!.dataPoints) {
      const a = attrs(p.attributes);
      assert.ok(STATUS_ATTRIBUTES.some((s) => a[s] !== undefined), `${name} ${key(a)}: no status code`);
      if (!withStatus) for (const s of STATUS_ATTRIBUTES) delete a[s];
      const k = key({ instrument: name, ...a });
      const v = { count: Number(p.count), sum: p.sum ?? 0, buckets: (p.bucketCounts ?? []).map(Number) };
      const had = otlp.get(k);
      otlp.set(k, had === undefined ? v : { count: had.count + v.count, sum: had.sum + v.sum, buckets: had.buckets.map((c, i) => c + v.buckets[i]!) });
    }
  }
  return otlp;
}

function assertConventionsEqual(metrics: Map<string, OtlpMetric>, samples: readonly Sample[], upstream?: URL): void {
  const scraped = scrapedHistograms(samples, 'rpcscope_call_duration_seconds', (labels) => convention(labels, upstream));
  assertHistogramsEqual(conventionPoints(metrics, false), scraped, 'semantic-convention durations');
  // By status: each point counts the calls rpcscope_calls_total counts with that
  // code (gRPC) or HTTP status (REST); every call here is unary.
  const byStatus = new Map<string, number>();
  for (const s of select(samples, 'rpcscope_calls_total')) {
    const c = convention(s.labels, upstream);
    const status: Record<string, string> = s.labels.protocol === 'rest' ? { 'http.response.status_code': s.labels.http_status! } : { 'rpc.status_code': s.labels.code! };
    const k = key({ ...c, ...status });
    byStatus.set(k, (byStatus.get(k) ?? 0) + s.value);
  }
  const otlp = conventionPoints(metrics, true);
  assert.deepEqual([...otlp.keys()].sort(), [...byStatus.keys()].sort(), 'semantic-convention durations by status: attribute sets');
  for (const [k, want] of byStatus) assert.equal(otlp.get(k)!.count, want, `${k}: the count of rpcscope_calls_total with that status`);
}

describe('OTLP metrics', () => {
  let echoServer: Upstream;
  let protobufReceiver: OtlpReceiver;
  let jsonReceiver: OtlpReceiver;
  let hanging: OtlpReceiver;
  let downUrl: string;
  const sidecars: SidecarProcess[] = [];
  const start = async (env: Record<string, string>, args: string[] = []): Promise<SidecarProcess> => {
    const s = await startSidecarProcess(['--upstream', echoServer.url, ...args], env);
    sidecars.push(s);
    return s;
  };

  before(async () => {
    [echoServer, protobufReceiver, jsonReceiver, hanging] = await Promise.all([startConnectEcho(), startOtlpReceiver(), startOtlpReceiver(), startOtlpReceiver({ answer: 'never' })]);
    // A port nothing listens on: a receiver that is down.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    downUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((r) => closed.close(r));
  });
  after(async () => {
    await Promise.all(sidecars.map((s) => s.stop()));
    await Promise.all([echoServer?.close(), protobufReceiver?.close(), jsonReceiver?.close(), hanging?.close()]);
  });

  it('pushes over http/protobuf exactly what /metrics serves: the conventions and every rpcscope family', async () => {
    const sidecar = await start({
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${protobufReceiver.url}/v1/metrics`,
      OTEL_METRIC_EXPORT_INTERVAL: '200',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'x-tenant=team-a,authorization=Bearer%20s3cret',
      OTEL_SERVICE_NAME: 'orders',
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=not-this-one,deployment.environment.name=staging,service.version=1.4.2',
      POD_NAME: 'orders-7d9f-abcde',
      POD_NAMESPACE: 'shop',
    });
    await traffic(sidecar, 12);
    const samples = await settle(sidecar, protobufReceiver);
    const last = protobufReceiver.metrics.at(-1)!;
    assert.equal(last.contentType, 'application/x-protobuf');
    const metrics = accumulate([last]);
    // The traffic really is in there: 12 OK and 4 NOT_FOUND gRPC calls, 12 + 3 REST calls.
    assert.equal(sum(samples, 'rpcscope_calls_total', { protocol: 'grpc' }), 16);
    assert.equal(sum(samples, 'rpcscope_calls_total', { protocol: 'rest' }), 15);
    // At the default detail level, the calls by status code: a point per code (gRPC) or HTTP status (REST).
    const counts = (name: string): Record<string, string | number>[] => metrics.get(name)!.histogram!.dataPoints.map((p) => ({ ...attrs(p.attributes), count: Number(p.count) }));
    assert.deepEqual(counts('rpc.server.call.duration'), [
      { 'rpc.system.name': 'grpc', 'rpc.method': 'echo.v1.EchoService/Echo', 'rpc.status_code': 'OK', count: 12 },
      { 'rpc.system.name': 'grpc', 'rpc.method': 'echo.v1.EchoService/Echo', 'rpc.status_code': 'NOT_FOUND', count: 4 },
    ]);
    const rest = counts('http.server.request.duration');
    assert.equal(rest.filter((p) => p['http.response.status_code'] === '200').reduce((n, p) => n + Number(p.count), 0), 12);
    assert.equal(rest.filter((p) => p['http.response.status_code'] === '404').reduce((n, p) => n + Number(p.count), 0), 3);
    assert.ok(rest.every((p) => p['url.scheme'] === 'http'));
    assert.equal(metrics.get('rpc.server.call.duration')!.histogram!.aggregationTemporality, 2);
    assertConventionsEqual(metrics, samples);
    assertRpcscopeFamiliesEqual(metrics, samples);
  });

  it('pushes an outbound sidecar\'s calls as the client instruments, and its endpoints\' families, as /metrics serves them', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const sidecar = await start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${receiver.url}/v1/metrics`, OTEL_METRIC_EXPORT_INTERVAL: '200' }, ['--mode', 'outbound']);
      await traffic(sidecar, 6);
      const samples = await settle(sidecar, receiver);
      const metrics = accumulate([receiver.metrics.at(-1)!]);
      assert.deepEqual([...metrics.keys()].filter((n) => !n.startsWith('rpcscope.')).sort(), ['http.client.request.duration', 'rpc.client.call.duration']);
      assert.ok(select(samples, 'rpcscope_upstream_calls_total').length > 0, 'the outbound sidecar counted its endpoint');
      assertConventionsEqual(metrics, samples, new URL(echoServer.url));
      assertRpcscopeFamiliesEqual(metrics, samples);
    } finally {
      await receiver.close();
    }
  });

  it('sends the resource of OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and the pod, and the headers of OTEL_EXPORTER_OTLP_METRICS_HEADERS', () => {
    const last = protobufReceiver.metrics.at(-1)!;
    assert.equal(last.headers['x-tenant'], 'team-a');
    assert.equal(last.headers.authorization, 'Bearer s3cret');
    const resource = attrs(last.request.resourceMetrics[0]!.resource!.attributes);
    assert.deepEqual(resource, {
      'service.name': 'orders',
      'deployment.environment.name': 'staging',
      'service.version': '1.4.2',
      'k8s.pod.name': 'orders-7d9f-abcde',
      'k8s.namespace.name': 'shop',
    });
    assert.equal(last.request.resourceMetrics[0]!.scopeMetrics[0]!.scope!.name, 'rpcscope');
  });

  it('pushes over http/json with delta temporality: the deltas add up to what /metrics serves', async () => {
    const sidecar = await start({
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: jsonReceiver.url,
      // Traces stay off: only metrics are asked for.
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'delta',
      OTEL_METRIC_EXPORT_INTERVAL: '150',
    });
    // Two bursts with exports between them: more than one delta carries calls.
    await traffic(sidecar, 5);
    await until('an export after the first burst', () => jsonReceiver.metrics.length >= 2);
    await traffic(sidecar, 7);
    const samples = await settle(sidecar, jsonReceiver);
    assert.ok(jsonReceiver.metrics.every((e) => e.contentType === 'application/json'));
    const calls = jsonReceiver.metrics.map((e) => e.request.resourceMetrics[0]!.scopeMetrics[0]!.metrics.find((m) => m.name === 'rpcscope.calls'));
    assert.ok(calls.filter((m) => m?.sum?.dataPoints.some((p) => p.asDouble! > 0)).length >= 2, 'the calls arrived in more than one delta');
    assert.ok(calls.every((m) => m === undefined || m.sum!.aggregationTemporality === 1));
    const metrics = accumulate(jsonReceiver.metrics);
    assert.equal(sum(samples, 'rpcscope_calls_total'), 5 + 2 + 5 + 2 + 7 + 3 + 7 + 2);
    assertConventionsEqual(metrics, samples);
    assertRpcscopeFamiliesEqual(metrics, samples);
  });

  it('never holds calls up for a receiver that hangs or is down: every call succeeds and the lost exports are counted', async (t) => {
    const hangingSidecar = await start({
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${hanging.url}/v1/metrics`,
      OTEL_METRIC_EXPORT_INTERVAL: '100',
      OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '60',
    });
    const downSidecar = await start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${downUrl}/v1/metrics`, OTEL_METRIC_EXPORT_INTERVAL: '100' });
    const plain = await start({});
    const exports = async (s: SidecarProcess): Promise<Record<string, number>> => {
      const samples = parseExposition(await (await fetch(`${s.adminUrl}/metrics`)).text());
      return Object.fromEntries(['success', 'failure', 'timeout', 'dropped'].map((o) => [o, sum(samples, 'rpcscope_otlp_exports_total', { outcome: o })]));
    };
    const timed = async (s: SidecarProcess): Promise<number> => {
      const t0 = performance.now();
      await traffic(s, 30);
      return performance.now() - t0;
    };
    // Each sidecar's traffic is timed on its own, the same calls, one after the other.
    const plainMs = await timed(plain);
    const hangingMs = await timed(hangingSidecar);
    const downMs = await timed(downSidecar);
    t.diagnostic(`the same 30 rounds of calls: ${plainMs.toFixed(0)} ms with OTLP off, ${hangingMs.toFixed(0)} ms pushing to a receiver that never answers (${(hangingMs / plainMs).toFixed(2)}x), ${downMs.toFixed(0)} ms to one that is down (${(downMs / plainMs).toFixed(2)}x)`);

    await until('the hanging receiver to have been tried', () => hanging.metricRequests() >= 2);
    await until('timed-out exports to be counted', async () => (await exports(hangingSidecar)).timeout! >= 2);
    const hung = await exports(hangingSidecar);
    assert.equal(hung.success, 0);
    assert.equal(hung.failure, 0);
    await until('refused exports to be counted', async () => (await exports(downSidecar)).failure! >= 2);
    const down = await exports(downSidecar);
    assert.equal(down.success, 0);
    assert.equal(sum(parseExposition(await (await fetch(`${plain.adminUrl}/metrics`)).text()), 'rpcscope_otlp_exports_total'), 0, 'no OTLP family without OTLP');
    assert.match(downSidecar.log(), /OTLP metrics export failed/);
  });

  it('logs what the tracing SDK reports, such as a span export to a receiver that is down, and goes on serving calls', async () => {
    const sidecar = await start({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${downUrl}/v1/traces`, OTEL_BSP_SCHEDULE_DELAY: '50' });
    await traffic(sidecar, 2);
    await until('a log line from the tracing SDK', () => /OpenTelemetry tracing: /.test(sidecar.log()));
    assert.equal(await rest(sidecar.url, '/v1/echo/after'), 200);
  });

  it('drops, and counts, an export whose turn comes while the previous one is still out: never two in flight', async () => {
    const slow = await startOtlpReceiver({ answer: 'never' });
    try {
      const sidecar = await start({
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${slow.url}/v1/metrics`,
        OTEL_METRIC_EXPORT_INTERVAL: '100',
        OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '700',
      });
      await traffic(sidecar, 2);
      const outcomes = async (): Promise<Record<string, number>> => {
        const samples = parseExposition(await (await fetch(`${sidecar.adminUrl}/metrics`)).text());
        return Object.fromEntries(['timeout', 'dropped'].map((o) => [o, sum(samples, 'rpcscope_otlp_exports_total', { outcome: o })]));
      };
      await until('an export to time out after drops', async () => (await outcomes()).timeout! >= 1);
      const { timeout, dropped } = await outcomes();
      // An export is posted only when none is out: every request but the one in flight ended in a timeout.
      assert.ok(slow.metricRequests() <= timeout! + 1, `${slow.metricRequests()} requests for ${timeout} timeouts`);
      assert.ok(dropped! >= 3, `${dropped} dropped turns while a 700 ms export was out at a 100 ms interval`);
    } finally {
      await slow.close();
    }
  });

  it('pushes to an https:// receiver that requires a client certificate, with the CA and the certificate the OTEL_EXPORTER_OTLP_* variables name', async () => {
    const serverCert = makeSelfSignedCert();
    const clientCert = makeSelfSignedCert();
    const receiver = await startOtlpReceiver({ tls: { cert: serverCert.cert, key: readFileSync(serverCert.keyFile), clientCa: clientCert.cert } });
    try {
      const endpoint = `${receiver.url}/v1/metrics`;
      const trusted = await start({
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: endpoint,
        OTEL_METRIC_EXPORT_INTERVAL: '200',
        OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE: serverCert.certFile,
        // The general variables serve where no metrics-specific one is set.
        OTEL_EXPORTER_OTLP_CLIENT_KEY: clientCert.keyFile,
        OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: clientCert.certFile,
      });
      // Without the CA, the receiver's certificate is not trusted; without a client certificate, the receiver refuses.
      const noCa = await start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: endpoint, OTEL_METRIC_EXPORT_INTERVAL: '200' });
      const noClientCert = await start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: endpoint, OTEL_METRIC_EXPORT_INTERVAL: '200', OTEL_EXPORTER_OTLP_CERTIFICATE: serverCert.certFile });
      await traffic(trusted, 3);
      const samples = await settle(trusted, receiver);
      const last = receiver.metrics.at(-1)!;
      assert.equal(last.clientCertificate, 'localhost', 'the sidecar presented its client certificate');
      assert.equal(sum(samples, 'rpcscope_calls_total'), 3 + 1 + 3 + 1);
      assertConventionsEqual(accumulate([last]), samples);

      const outcomes = async (s: SidecarProcess): Promise<{ success: number; failure: number }> => {
        const scraped = parseExposition(await (await fetch(`${s.adminUrl}/metrics`)).text());
        return { success: sum(scraped, 'rpcscope_otlp_exports_total', { outcome: 'success' }), failure: sum(scraped, 'rpcscope_otlp_exports_total', { outcome: 'failure' }) };
      };
      for (const [s, why] of [[noCa, /self[- ]signed certificate/], [noClientCert, /socket hang up|ECONNRESET|certificate required|alert/]] as const) {
        await traffic(s, 1);
        await until('a failed export', async () => (await outcomes(s)).failure >= 1);
        assert.equal((await outcomes(s)).success, 0);
        assert.match(s.log(), /OTLP metrics export failed/);
        assert.match(s.log(), why);
      }
      assert.ok(receiver.metrics.every((e) => e.clientCertificate === 'localhost'), 'only the sidecar with a client certificate got through');
    } finally {
      await receiver.close();
    }
  });

  it('refuses a bad OTEL_ value at start, naming it', async () => {
    await assert.rejects(start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "grpc" is not offered/);
    await assert.rejects(start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_METRIC_EXPORT_INTERVAL: 'soon' }), /OTEL_METRIC_EXPORT_INTERVAL: "soon" is not a positive whole number/);
    await assert.rejects(start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_RESOURCE_ATTRIBUTES: 'team' }), /OTEL_RESOURCE_ATTRIBUTES: "team" is not key=value/);
    await assert.rejects(start({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${jsonReceiver.url}/v1/traces`, OTEL_RESOURCE_ATTRIBUTES: 'team=a,=b' }), /OTEL_RESOURCE_ATTRIBUTES: "=b" is not key=value/);
    // The span export's variables too, which the OpenTelemetry SDK would otherwise drop without a word.
    await assert.rejects(start({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${jsonReceiver.url}/v1/traces`, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" is not offered/);
    await assert.rejects(start({ OTEL_EXPORTER_OTLP_ENDPOINT: jsonReceiver.url, OTEL_TRACES_EXPORTER: 'zipkin' }), /OTEL_TRACES_EXPORTER: "zipkin" is not one of otlp, none/);
    await assert.rejects(start({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'exponential' }), /OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: "exponential" is not one of explicit_bucket_histogram, base2_exponential_bucket_histogram/);
  });

  it('pushes exponential histograms when asked: counts and sums equal the scrape\'s, and a quantile read from them lies within a bucket of the latency the app adds', async () => {
    const receiver = await startOtlpReceiver();
    try {
      const sidecar = await start({
        OTEL_METRICS_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${receiver.url}/v1/metrics`,
        OTEL_METRIC_EXPORT_INTERVAL: '200',
        OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'base2_exponential_bucket_histogram',
      });
      // The app holds each OK call 40 ms; the client times each call, an upper bound of what the sidecar saw.
      const client = await echoClient(sidecar.url);
      let slowest = 0;
      try {
        for (let i = 0; i < 15; i++) {
          const t0 = performance.now();
          assert.equal(await echo(client, { message: `m${i}`, delayMs: 40 }), 0);
          slowest = Math.max(slowest, (performance.now() - t0) / 1000);
          if (i % 5 === 0) assert.equal(await echo(client, { message: 'missing', failCode: grpc.status.NOT_FOUND }), grpc.status.NOT_FOUND);
          assert.equal(await rest(sidecar.url, `/v1/echo/item-${i}`), 200);
        }
      } finally {
        client.close();
      }
      const samples = await settle(sidecar, receiver);
      const last = receiver.metrics.at(-1)!;
      assert.equal(last.contentType, 'application/x-protobuf');
      const metrics = accumulate([last]);
      const rpc = metrics.get('rpc.server.call.duration')?.exponentialHistogram;
      assert.ok(rpc, `no exponential rpc.server.call.duration in ${[...metrics.keys()].join(', ')}`);
      assert.equal(rpc.aggregationTemporality, 2);
      assert.ok([...metrics.values()].every((m) => m.histogram === undefined), 'no explicit-bucket histogram left');

      // Each point's count, by status, is the scrape's count of calls with that code.
      const byCode = Object.fromEntries(rpc.dataPoints.map((p) => [attrs(p.attributes)['rpc.status_code'], p]));
      assert.deepEqual(Object.keys(byCode).sort(), ['NOT_FOUND', 'OK']);
      for (const code of ['OK', 'NOT_FOUND']) assert.equal(Number(byCode[code]!.count), sum(samples, 'rpcscope_calls_total', { protocol: 'grpc', code }), code);
      // Count and sum: every exponential histogram against its /metrics family.
      const durations = [...metrics.values()].filter((m) => /^(rpc|http)\.server\./.test(m.name)).flatMap((m) => m.exponentialHistogram!.dataPoints);
      assertCountAndSum(durations, samples, 'rpcscope_call_duration_seconds', {});
      for (const m of metrics.values()) {
        if (!m.name.startsWith('rpcscope.') || m.exponentialHistogram === undefined) continue;
        const name = `${m.name.replace(/^rpcscope\./, 'rpcscope_')}${m.unit === 's' ? '_seconds' : ''}`;
        for (const p of m.exponentialHistogram.dataPoints) assertCountAndSum([p], samples, name, attrs(p.attributes));
      }

      // The median OK call's bucket: its bounds hold a latency between the app's 40 ms and the slowest call the client timed.
      const ok = byCode.OK!;
      const scale = ok.scale ?? 0;
      const offset = ok.positive?.offset ?? 0;
      const counts: number[] = (ok.positive?.bucketCounts ?? []).map(Number);
      let seen = Number(ok.zeroCount ?? 0);
      const k = counts.findIndex((c: number) => (seen += c) >= Number(ok.count) / 2);
      const lower = 2 ** ((offset + k) * 2 ** -scale);
      const upper = 2 ** ((offset + k + 1) * 2 ** -scale);
      assert.ok(upper >= 0.04 && lower <= slowest, `the median's bucket (${lower}, ${upper}] s holds no latency between 0.04 s and ${slowest} s`);
      // And the scale is the finest 160 buckets allow: one step finer could not span 40 ms to the slowest call.
      assert.ok(Math.log2(slowest / 0.04) * 2 ** (scale + 1) > 159, `scale ${scale} (buckets ${((upper / lower - 1) * 100).toFixed(2)} % wide) is coarser than 40 ms to ${slowest} s needs`);
    } finally {
      await receiver.close();
    }
  });
});
