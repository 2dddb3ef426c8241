// Golden tests of the exposition: hand-built call records in, the exact text of
// /metrics out, scraped over HTTP. docs/metrics.md is the contract these pin.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { CONNECTION_CLOSED } from '../../src/call/call-record.ts';
import type { CallRecord } from '../../src/call/call-record.ts';
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { METRICS_DETAILS } from '../../src/config/schema.ts';
import type { MetricsDetail } from '../../src/config/schema.ts';
import type { MetricsObserver, MetricsObserverOptions } from '../../src/observe/metrics-observer.ts';
import { Router, type RouterOptions } from '../../src/route/router.ts';
import { composeObservers, noopObserver } from '../../src/call/observer.ts';
import type { ConnectionRecord } from '../../src/call/observer.ts';
import { loadOperationsFile } from '../../src/route/operation-map.ts';
import { loadProtoDir } from '../../src/route/proto-catalog.ts';
import { endedCall } from './records.ts';
import { workloadCalls } from './series-workload.ts';
import { contractSamples, scrape } from './scrape.ts';

const fixtures = join(import.meta.dirname, '../fixtures');
const observers: MetricsObserver[] = [];
after(() => Promise.all(observers.map((o) => o.shutdown())));

/** A metrics observer with its own router, as the pipeline hands it one. */
function observer(opts: Partial<MetricsObserverOptions> & Partial<RouterOptions> = {}): MetricsObserver {
  const { maxMethods = 100, routes, operations, protos, ...rest } = opts;
  const o = createMetricsObserver({ router: new Router({ maxMethods, routes, operations, protos }), env: {}, ...rest });
  observers.push(o);
  return o;
}

/** A call through its whole life: started, filled in as the proxy would, ended. */
function run(o: MetricsObserver, fields: Parameters<typeof endedCall>[0] = {}): CallRecord {
  const call = endedCall(fields);
  const end = call.endTime;
  call.endTime = 0;
  o.callStarted(call);
  call.endTime = end;
  o.callEnded(call);
  return call;
}

function connection(fields: Partial<ConnectionRecord> = {}): ConnectionRecord {
  return { id: 1, side: 'downstream', httpVersion: '2', peer: '10.0.0.9:40000', openTime: 0, closeTime: 0, calls: 0, active: 0, ...fields };
}

const okGrpc = { httpStatus: 200, grpcStatus: 0, requestMessages: 1, responseMessages: 1 };

/**
 * Compares `ours` with the golden file. RPCSCOPE_WRITE_GOLDEN=1 rewrites the file
 * first, for a developer updating the contract; never under CI, where the run
 * that checks the file would then write what it checks and pass whatever it got.
 */
function assertGolden(file: string, ours: string): void {
  const path = join(fixtures, 'golden', file);
  if (process.env.RPCSCOPE_WRITE_GOLDEN === '1') {
    if (process.env.CI) throw new Error(`RPCSCOPE_WRITE_GOLDEN=1 is refused under CI (CI=${process.env.CI}): a run that rewrites ${file} cannot also check it; update golden files locally and commit them`);
    writeFileSync(path, ours);
  }
  assert.equal(ours, readFileSync(path, 'utf8'));
}

/** Sample lines of one metric (its histogram series included). */
function samples(text: string, name: string): string[] {
  return contractSamples(text).filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `) || l.startsWith(`${name}_`));
}

describe('golden exposition', () => {
  for (const [detail, file] of [['standard', 'grpc-unary-call.prom'], ['full', 'grpc-unary-call.full.prom']] as const) test(`one gRPC unary call, end to end, at --metrics-detail ${detail}`, async () => {
    const o = observer({ serviceName: 'orders-sidecar', env: { POD_NAME: 'orders-7d9f', POD_NAMESPACE: 'shop' }, detail });
    o.connectionOpened(connection());
    run(o, {
      ...okGrpc,
      ms: 12.5,
      upstreamStartTime: 1000.5,
      upstreamHeadersTime: 1011,
      firstResponseMessageTime: 1011.5,
      upstreamEndTime: 1012,
      requestBytes: 24,
      responseBytes: 310,
      deadline: { header: 'grpc-timeout', raw: '250m', ms: 250 },
      upstream: '10.1.2.3:50051',
    });
    o.connectionClosed(connection({ closeTime: 30_000, calls: 1 }));
    const text = await scrape(o);
    // The process's own series (and the build, which differs per Node version) have their own test.
    const ours = text.split('\n').filter((l) => !/^(# (HELP|TYPE) )?(process_|nodejs_|rpcscope_build_info)/.test(l)).join('\n');
    assertGolden(file, ours);
  });
});

/** What Prometheus 2.x sends once exemplar storage is on. */
const OPENMETRICS_ACCEPT = 'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN_ID = '00f067aa0ba902b7';

describe('OpenMetrics exposition', () => {
  /** Observer whose calls all belong to one sampled span (`sampled` false: the caller's trace was not sampled). */
  function traced(sampled = true): MetricsObserver {
    return observer({
      serviceName: 'orders-sidecar',
      env: { POD_NAME: 'orders-7d9f', POD_NAMESPACE: 'shop' },
      spanOf: () => ({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: sampled ? 1 : 0 }),
      timeOrigin: 1_700_000_000_000,
    });
  }

  test('one gRPC unary call: counters as families less _total, a trace exemplar on the latency bucket, # EOF', async () => {
    const o = traced();
    o.connectionOpened(connection());
    run(o, { ...okGrpc, ms: 12.5, upstreamStartTime: 1000.5, upstreamEndTime: 1012, requestBytes: 24, responseBytes: 310, deadline: { header: 'grpc-timeout', raw: '250m', ms: 250 }, upstream: '10.1.2.3:50051' });
    o.connectionClosed(connection({ closeTime: 30_000, calls: 1 }));
    const text = await scrape(o, OPENMETRICS_ACCEPT);
    const ours = text.split('\n').filter((l) => !/^(# (HELP|TYPE|UNIT) )?(process_|nodejs_|rpcscope_build_info)/.test(l)).join('\n');
    assertGolden('grpc-unary-call.openmetrics', ours);
  });

  test('the Prometheus text format stays without exemplars, and is what a scraper gets unless it asks for OpenMetrics', async () => {
    const o = traced();
    run(o, { ...okGrpc, ms: 12.5 });
    for (const accept of [undefined, 'text/plain;version=0.0.4', 'application/openmetrics-text;version=1.0.0;q=0,text/plain;q=0.5']) {
      const text = await scrape(o, accept);
      assert.doesNotMatch(text, /# EOF|trace_id/);
      assert.match(text, /^# TYPE rpcscope_calls_total counter$/m);
    }
  });

  test('a bucket keeps one exemplar, replaced by a later sampled call at most once a second', async () => {
    const ids = ['a'.repeat(32), 'b'.repeat(32), 'c'.repeat(32)];
    let next = 0;
    const o = observer({ spanOf: () => ({ traceId: ids[next]!, spanId: SPAN_ID, traceFlags: 1 }), timeOrigin: 0 });
    const bucket = () => scrape(o, OPENMETRICS_ACCEPT).then((t) => t.split('\n').find((l) => l.startsWith('rpcscope_call_duration_seconds_bucket{') && l.includes('le="0.025"'))!);
    run(o, { ...okGrpc, ms: 12 });
    next = 1;
    run(o, { ...okGrpc, startTime: 1500, endTime: 1513 });
    assert.match(await bucket(), new RegExp(` 2 # \\{trace_id="${ids[0]}",span_id="${SPAN_ID}"\\} 0.012 1.012$`));
    next = 2;
    run(o, { ...okGrpc, startTime: 2100, endTime: 2120 });
    assert.match(await bucket(), new RegExp(` 3 # \\{trace_id="${ids[2]}",span_id="${SPAN_ID}"\\} 0.02 2.120$`));
  });

  test('a call whose trace was not sampled leaves no exemplar', async () => {
    const o = traced(false);
    run(o, { ...okGrpc, ms: 12.5 });
    const text = await scrape(o, OPENMETRICS_ACCEPT);
    assert.doesNotMatch(text, /trace_id/);
    assert.match(text, /^rpcscope_call_duration_seconds_bucket\{.*le="0.025"\} 1$/m);
  });
});

const CALL_LABELS = ['direction', 'protocol', 'encoding', 'method', 'operation'];

/** docs/metrics.md, as data: each metric's type and exact label names, at the default detail level. */
const CONTRACT: Record<string, [type: string, labels: string[]]> = {
  rpcscope_calls_total: ['counter', [...CALL_LABELS, 'code', 'http_status']],
  rpcscope_protocol_calls_total: ['counter', ['direction', 'protocol', 'code']],
  rpcscope_calls_active: ['gauge', ['direction', 'protocol', 'method']],
  rpcscope_call_duration_seconds: ['histogram', CALL_LABELS],
  rpcscope_call_bytes_total: ['counter', [...CALL_LABELS, 'flow']],
  rpcscope_proxy_overhead_seconds: ['histogram', ['direction', 'protocol']],
  rpcscope_stream_duration_seconds: ['histogram', ['direction', 'protocol', 'method', 'stream_type']],
  rpcscope_stream_first_message_seconds: ['histogram', ['direction', 'protocol', 'method']],
  rpcscope_messages_total: ['counter', ['direction', 'protocol', 'method', 'flow']],
  rpcscope_stream_resets_total: ['counter', ['direction', 'protocol', 'method', 'side', 'error_code']],
  rpcscope_http2_goaways_total: ['counter', ['side', 'error_code']],
  rpcscope_deadline_requested_seconds: ['histogram', ['direction', 'protocol', 'method']],
  rpcscope_deadline_exceeded_total: ['counter', ['direction', 'protocol', 'method', 'detected_by']],
  rpcscope_deadline_used_ratio: ['histogram', ['direction', 'protocol', 'method']],
  rpcscope_calls_without_deadline_total: ['counter', ['direction', 'protocol', 'method']],
  rpcscope_deadline_header_invalid_total: ['counter', ['direction', 'protocol']],
  rpcscope_connections_active: ['gauge', ['side', 'http_version']],
  rpcscope_connection_duration_seconds: ['histogram', ['side', 'http_version']],
  rpcscope_connection_calls: ['histogram', ['side', 'http_version']],
  rpcscope_upstream_calls_total: ['counter', ['upstream', 'code']],
  rpcscope_upstream_calls_active: ['gauge', ['upstream']],
  rpcscope_upstream_call_duration_seconds: ['histogram', ['upstream']],
  rpcscope_upstream_connections_active: ['gauge', ['upstream']],
  rpcscope_upstream_endpoints: ['gauge', []],
  rpcscope_load_skew_ratio: ['gauge', []],
  rpcscope_internal_errors_total: ['counter', ['where']],
  rpcscope_connections_terminated_total: ['counter', ['reason']],
  rpcscope_upstream_queue_overflow_total: ['counter', []],
  rpcscope_streams_refused_total: ['counter', ['reason']],
  rpcscope_connections_overflow_total: ['counter', []],
  rpcscope_keepalive_timeouts_total: ['counter', ['side']],
  rpcscope_upstream_ejections_total: ['counter', ['reason']],
  rpcscope_upstream_ejected_endpoints: ['gauge', []],
  rpcscope_build_info: ['gauge', ['version', 'node_version', 'commit']],
};

/** What --metrics-detail changes (docs/metrics.md "Detail levels and cost"). */
const CONTRACT_BY_DETAIL: Record<MetricsDetail, Record<string, [type: string, labels: string[]]>> = {
  basic: CONTRACT,
  standard: CONTRACT,
  full: {
    ...CONTRACT,
    rpcscope_call_duration_seconds: ['histogram', [...CALL_LABELS, 'code']],
    rpcscope_payload_bytes: ['histogram', [...CALL_LABELS, 'flow']],
  },
};

const DURATION_RANGE: Record<MetricsDetail, [string, string]> = { basic: ['0.01', '2.5'], standard: ['0.005', '2.5'], full: ['0.0005', '30'] };

/** The le values docs/metrics.md gives a range for: first and last finite bucket. */
const BUCKET_RANGES: Record<string, [string, string]> = {
  rpcscope_stream_duration_seconds: ['0.01', '3600'],
  rpcscope_deadline_used_ratio: ['0.1', '2'],
};

function labelNames(sample: string): string[] {
  const body = /\{(.*)\}/.exec(sample)?.[1] ?? '';
  return [...body.matchAll(/([a-z_]+)="(?:[^"\\]|\\.)*"/g)].map((m) => m[1]!);
}

describe('the docs/metrics.md contract', () => {
  for (const detail of METRICS_DETAILS) test(`every metric, with its exact name, type, labels and bucket range, at --metrics-detail ${detail}`, async () => {
    const o = observer({ protos: loadProtoDir(join(fixtures, 'protos')), detail });
    o.connectionOpened(connection());
    o.connectionClosed(connection({ closeTime: 5_000, calls: 3 }));
    o.goaway('upstream', 0);
    o.connectionOpened(connection({ side: 'upstream', peer: '10.1.2.3:50051' }));
    run(o, { ...okGrpc, upstreamStartTime: 1001, upstreamEndTime: 1009, upstream: '10.1.2.3:50051', deadline: { header: 'grpc-timeout', raw: '1S', ms: 1000 } });
    run(o, { ...okGrpc, path: '/order.v1.OrderService/WatchOrders', responseMessages: 4, firstResponseMessageTime: 1002 });
    run(o, { ms: 200, path: '/order.v1.OrderService/Chat', deadline: { header: 'grpc-timeout', raw: '100m', ms: 100 }, reset: { side: 'client', code: 8 } });
    run(o, { protocol: 'connect', framed: false, encoding: 'json', deadline: { header: 'connect-timeout-ms', raw: '1.5', ms: undefined }, httpStatus: 200 });
    run(o, { protocol: 'rest', framed: false, encoding: 'json', httpVersion: '1.1', httpMethod: 'GET', path: '/v1/orders/7', httpStatus: 404 });
    const text = await scrape(o);

    const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const ours = [...types.keys()].filter((n) => n.startsWith('rpcscope_'));
    const contract = CONTRACT_BY_DETAIL[detail];
    assert.deepEqual(ours.sort(), Object.keys(contract).sort());
    for (const [name, [type, labels]] of Object.entries(contract)) {
      assert.equal(types.get(name), type, name);
      const lines = samples(text, name);
      assert.ok(lines.length > 0, name);
      for (const line of lines) {
        const sampleName = line.slice(0, line.search(/[{ ]/));
        const expected = sampleName === `${name}_bucket` ? [...labels, 'le'] : labels;
        assert.deepEqual(labelNames(line), expected, line);
        assert.ok([name, `${name}_bucket`, `${name}_sum`, `${name}_count`].includes(sampleName) && (type === 'histogram' || sampleName === name), line);
      }
    }
    const ranges = { ...BUCKET_RANGES, rpcscope_call_duration_seconds: DURATION_RANGE[detail], ...(detail === 'full' ? { rpcscope_payload_bytes: ['64', '67108864'] } : {}) };
    for (const [name, [first, last]] of Object.entries(ranges)) {
      const les = [...new Set(samples(text, `${name}_bucket`).map((l) => /le="([^"]+)"/.exec(l)![1]!))];
      assert.equal(les[0], first, name);
      assert.deepEqual(les.slice(-2), [last, '+Inf'], name);
    }
    for (const [name, type] of types) {
      if (type === 'counter') assert.match(name, /^[a-z0-9_]+(?<!_total)_total$/, name);
    }
  });

  /**
   * Blocks the event loop for `ms` where Node's delay monitor sees it. The monitor
   * (a 10 ms timer) measures each sample from its previous one, and a render
   * resets it: it must tick once before the block, and once after. libuv runs due
   * timers in the order they fell due, so its tick comes before a 30 ms timer set
   * at the same moment, however late both run: each wait is an ordering, not a
   * guess at how long the machine takes.
   */
  async function blockLoop(ms: number): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 30));
    const blockedUntil = performance.now() + ms;
    while (performance.now() < blockedUntil);
    await new Promise((resolve) => setTimeout(resolve, 30));
  }

  test('process metrics and target_info', async () => {
    const o = observer();
    // A loop blocked for 60 ms: the next scrape's maximum delay shows it.
    await blockLoop(60);
    const text = await scrape(o);
    assert.match(text, /^# TYPE target_info gauge\ntarget_info\{service_name="rpcscope"\} 1$/m);
    assert.match(text, /^# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total \d+(\.\d+)?$/m);
    assert.match(text, /^# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes [1-9]\d+$/m);
    const start = Number(/^process_start_time_seconds (\S+)$/m.exec(text)?.[1]);
    assert.ok(Math.abs(start - (Date.now() / 1000 - process.uptime())) < 2, `process_start_time_seconds ${start}`);
    const lag = (name: string): number => Number(new RegExp(`^# TYPE nodejs_eventloop_lag_${name}_seconds gauge\\nnodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1]);
    assert.ok(lag('max') >= 0.06, `max ${lag('max')}`);
    for (const name of ['min', 'mean', 'stddev', 'p50', 'p90', 'p99']) assert.ok(lag(name) >= 0 && lag(name) <= lag('max'), `${name} ${lag(name)}`);
    assert.ok(lag('min') >= 0.009, 'each sample includes the 10 ms sampling period');
    assert.doesNotMatch(text, /otel_scope_name/);
    // Each scrape covers the time since the previous one. Two renders in the same
    // turn of the loop, after another block: the first shows it, the second has
    // had no sample at all since, and reads 0. No bound on how calm the machine
    // was between two scrapes (a busy one can stall this process for 60 ms).
    await blockLoop(60);
    const maxOf = (t: string): number => Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(t)?.[1]);
    const first = o.render();
    const again = o.render();
    assert.ok(maxOf(first) >= 0.06, `max ${maxOf(first)} after a 60 ms block`);
    assert.equal(maxOf(again), 0, 'a scrape right after another has seen no delay of the block before it');
  });

  test('build info: version, Node version, and the commit from RPCSCOPE_COMMIT', async () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const built = await scrape(observer({ env: { RPCSCOPE_COMMIT: '6a67e11' } }));
    assert.match(built, new RegExp(`^# TYPE rpcscope_build_info gauge\\nrpcscope_build_info\\{version="${pkg.version.replace(/\./g, '\\.')}",node_version="${process.version.replace(/\./g, '\\.')}",commit="6a67e11"\\} 1$`, 'm'));
    assert.match(await scrape(observer()), /^rpcscope_build_info\{.*,commit="unknown"\} 1$/m);
  });

  test('served as the text format 0.0.4, with its length', async () => {
    const o = observer();
    const server = createServer((req, res) => o.handleMetrics(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
      const body = await res.text();
      assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
      assert.equal(Number(res.headers.get('content-length')), Buffer.byteLength(body));
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('calls', () => {
  test('in flight: calls_active, upstream_calls_active and messages counted before the end', async () => {
    const o = observer();
    const call = endedCall({ path: '/order.v1.OrderService/Chat' });
    o.callStarted(call);
    call.upstream = '10.0.0.5:8080';
    call.requestMessages = 3;
    call.responseMessages = 2;
    const during = await scrape(o);
    assert.deepEqual(samples(during, 'rpcscope_calls_active'), ['rpcscope_calls_active{direction="inbound",protocol="grpc",method="order.v1.OrderService/Chat"} 1']);
    assert.deepEqual(samples(during, 'rpcscope_upstream_calls_active'), ['rpcscope_upstream_calls_active{upstream="10.0.0.5:8080"} 1']);
    assert.deepEqual(samples(during, 'rpcscope_messages_total'), [
      'rpcscope_messages_total{direction="inbound",protocol="grpc",method="order.v1.OrderService/Chat",flow="request"} 3',
      'rpcscope_messages_total{direction="inbound",protocol="grpc",method="order.v1.OrderService/Chat",flow="response"} 2',
    ]);
    assert.deepEqual(samples(during, 'rpcscope_calls_total'), []);
    call.requestMessages = 5;
    call.responseMessages = 9;
    call.grpcStatus = 0;
    call.httpStatus = 200;
    o.callEnded(call);
    const afterEnd = await scrape(o);
    assert.deepEqual(samples(afterEnd, 'rpcscope_calls_active'), ['rpcscope_calls_active{direction="inbound",protocol="grpc",method="order.v1.OrderService/Chat"} 0']);
    assert.deepEqual(samples(afterEnd, 'rpcscope_upstream_calls_active'), ['rpcscope_upstream_calls_active{upstream="10.0.0.5:8080"} 0']);
    assert.deepEqual(samples(afterEnd, 'rpcscope_messages_total').map((l) => l.split(' ')[1]), ['5', '9']);
    assert.deepEqual(samples(afterEnd, 'rpcscope_upstream_calls_total'), ['rpcscope_upstream_calls_total{upstream="10.0.0.5:8080",code="OK"} 1']);
  });

  test('codes and statuses across protocols; the status is empty when none was sent', async () => {
    const o = observer();
    const rest = { protocol: 'rest' as const, framed: false, encoding: 'json' as const, httpVersion: '1.1' as const, httpMethod: 'GET' };
    run(o, { ...rest, path: '/v1/orders/1', httpStatus: 200 });
    run(o, { ...rest, path: '/v1/orders/2', httpStatus: 200 });
    run(o, { ...rest, path: '/v1/orders/3', httpStatus: 404 });
    run(o, { ...rest, path: '/v1/orders/4', reset: { side: 'client', code: CONNECTION_CLOSED } });
    run(o, { protocol: 'connect', framed: false, encoding: 'json', httpStatus: 404, connectCode: 'not_found' });
    run(o, { protocol: 'grpc_web', encoding: 'text', httpVersion: '1.1', httpStatus: 200, grpcStatus: 14 });
    run(o, { upstreamUnreachable: true, httpStatus: 200, grpcStatus: 14 });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_total'), [
      'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="json",method="GET /v1/orders/{id}",operation="GET /v1/orders/{id}",code="OK",http_status="200"} 2',
      'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="json",method="GET /v1/orders/{id}",operation="GET /v1/orders/{id}",code="NOT_FOUND",http_status="404"} 1',
      'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="json",method="GET /v1/orders/{id}",operation="GET /v1/orders/{id}",code="CANCELLED",http_status=""} 1',
      'rpcscope_calls_total{direction="inbound",protocol="connect",encoding="json",method="order.v1.OrderService/GetOrder",operation="order.v1.OrderService/GetOrder",code="NOT_FOUND",http_status="404"} 1',
      'rpcscope_calls_total{direction="inbound",protocol="grpc_web",encoding="text",method="order.v1.OrderService/GetOrder",operation="order.v1.OrderService/GetOrder",code="UNAVAILABLE",http_status="200"} 1',
      'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="order.v1.OrderService/GetOrder",operation="order.v1.OrderService/GetOrder",code="UNAVAILABLE",http_status="200"} 1',
    ]);
    assert.deepEqual(samples(text, 'rpcscope_stream_resets_total'), [
      'rpcscope_stream_resets_total{direction="inbound",protocol="rest",method="GET /v1/orders/{id}",side="client",error_code="CONNECTION_CLOSED"} 1',
    ]);
    assert.deepEqual(samples(text, 'rpcscope_calls_without_deadline_total'), [
      'rpcscope_calls_without_deadline_total{direction="inbound",protocol="connect",method="order.v1.OrderService/GetOrder"} 1',
      'rpcscope_calls_without_deadline_total{direction="inbound",protocol="grpc_web",method="order.v1.OrderService/GetOrder"} 1',
      'rpcscope_calls_without_deadline_total{direction="inbound",protocol="grpc",method="order.v1.OrderService/GetOrder"} 1',
    ], 'REST calls are not expected to carry a deadline');
    // The per-protocol counts the fleet rules read: the same calls, the method and status summed away.
    assert.deepEqual(samples(text, 'rpcscope_protocol_calls_total'), [
      'rpcscope_protocol_calls_total{direction="inbound",protocol="rest",code="OK"} 2',
      'rpcscope_protocol_calls_total{direction="inbound",protocol="rest",code="NOT_FOUND"} 1',
      'rpcscope_protocol_calls_total{direction="inbound",protocol="rest",code="CANCELLED"} 1',
      'rpcscope_protocol_calls_total{direction="inbound",protocol="connect",code="NOT_FOUND"} 1',
      'rpcscope_protocol_calls_total{direction="inbound",protocol="grpc_web",code="UNAVAILABLE"} 1',
      'rpcscope_protocol_calls_total{direction="inbound",protocol="grpc",code="UNAVAILABLE"} 1',
    ]);
  });

  test('the method guard: later methods fold into _OTHER, earlier ones keep their series', async () => {
    const o = observer({ maxMethods: 1 });
    run(o, { ...okGrpc, path: '/a.v1.S/First' });
    run(o, { ...okGrpc, path: '/a.v1.S/Second' });
    run(o, { ...okGrpc, path: '/not-a-method' });
    run(o, { ...okGrpc, path: '/a.v1.S/First' });
    run(o, { protocol: 'connect', framed: false, httpStatus: 200, path: '/a.v1.S/Second' });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_total'), [
      'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="a.v1.S/First",operation="a.v1.S/First",code="OK",http_status="200"} 2',
      'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="_OTHER",operation="_OTHER",code="OK",http_status="200"} 2',
      'rpcscope_calls_total{direction="inbound",protocol="connect",encoding="proto",method="a.v1.S/Second",operation="a.v1.S/Second",code="OK",http_status="200"} 1',
    ]);
  });

  test('one operation across REST and gRPC, from the operations file and google.api.http', async () => {
    const o = observer({ protos: loadProtoDir(join(fixtures, 'protos')), operations: loadOperationsFile(join(fixtures, 'routing/operations.yaml')) });
    const rest = { protocol: 'rest' as const, framed: false, encoding: 'json' as const, httpVersion: '1.1' as const };
    run(o, { ...rest, httpMethod: 'GET', path: '/v1/orders/9', httpStatus: 200 });
    run(o, { ...okGrpc });
    run(o, { ...rest, httpMethod: 'POST', path: '/v1/orders', httpStatus: 201 });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_total'), [
      'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="json",method="GET /v1/orders/{id}",operation="GetOrder",code="OK",http_status="200"} 1',
      'rpcscope_calls_total{direction="inbound",protocol="grpc",encoding="proto",method="order.v1.OrderService/GetOrder",operation="GetOrder",code="OK",http_status="200"} 1',
      'rpcscope_calls_total{direction="inbound",protocol="rest",encoding="json",method="POST /v1/orders",operation="order.v1.OrderService/CreateOrder",code="OK",http_status="201"} 1',
    ]);
  });

  test('a call ended without having been started is counted, and not as active', async () => {
    const o = observer();
    o.callEnded(endedCall(okGrpc));
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_active'), ['rpcscope_calls_active{direction="inbound",protocol="grpc",method="order.v1.OrderService/GetOrder"} 0']);
    assert.equal(samples(text, 'rpcscope_calls_total').length, 1);
  });

  test('another observer taking the per-call slot does not leave the call active', async () => {
    const o = observer();
    const composed = composeObservers([o, { ...noopObserver, callStarted: (c) => { c.observation = 'a span'; } }]);
    const call = endedCall(okGrpc);
    composed.callStarted(call);
    composed.callEnded(call);
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_active'), ['rpcscope_calls_active{direction="inbound",protocol="grpc",method="order.v1.OrderService/GetOrder"} 0']);
    assert.equal(samples(text, 'rpcscope_calls_total').length, 1);
  });

  test('directions are separate series', async () => {
    const o = observer();
    run(o, okGrpc);
    run(o, { ...okGrpc, direction: 'outbound' });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_calls_active').map((l) => /direction="(\w+)"/.exec(l)![1]), ['inbound', 'outbound']);
  });
});

describe('streams', () => {
  test('the descriptor makes a one-message call a stream; without one, the counts decide', async () => {
    const o = observer({ protos: loadProtoDir(join(fixtures, 'protos')) });
    run(o, { ...okGrpc, path: '/order.v1.OrderService/WatchOrders', ms: 2_000, firstResponseMessageTime: 1_003 });
    run(o, { ...okGrpc, path: '/x.v1.Unknown/Chat', requestMessages: 2, responseMessages: 3, ms: 40_000 });
    run(o, { ...okGrpc, path: '/x.v1.Unknown/Get' });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_stream_duration_seconds').filter((l) => !l.includes('_bucket')), [
      'rpcscope_stream_duration_seconds_count{direction="inbound",protocol="grpc",method="order.v1.OrderService/WatchOrders",stream_type="server_streaming"} 1',
      'rpcscope_stream_duration_seconds_sum{direction="inbound",protocol="grpc",method="order.v1.OrderService/WatchOrders",stream_type="server_streaming"} 2',
      'rpcscope_stream_duration_seconds_count{direction="inbound",protocol="grpc",method="x.v1.Unknown/Chat",stream_type="bidi_streaming"} 1',
      'rpcscope_stream_duration_seconds_sum{direction="inbound",protocol="grpc",method="x.v1.Unknown/Chat",stream_type="bidi_streaming"} 40',
    ]);
    assert.ok(samples(text, 'rpcscope_stream_duration_seconds').includes(
      'rpcscope_stream_duration_seconds_bucket{direction="inbound",protocol="grpc",method="x.v1.Unknown/Chat",stream_type="bidi_streaming",le="30"} 0',
    ));
    assert.ok(samples(text, 'rpcscope_stream_duration_seconds').includes(
      'rpcscope_stream_duration_seconds_bucket{direction="inbound",protocol="grpc",method="x.v1.Unknown/Chat",stream_type="bidi_streaming",le="60"} 1',
    ));
    assert.deepEqual(samples(text, 'rpcscope_stream_first_message_seconds').filter((l) => l.includes('_sum')), [
      'rpcscope_stream_first_message_seconds_sum{direction="inbound",protocol="grpc",method="order.v1.OrderService/WatchOrders"} 0.003',
    ]);
    assert.deepEqual(samples(text, 'rpcscope_call_duration_seconds_count'), [
      'rpcscope_call_duration_seconds_count{direction="inbound",protocol="grpc",encoding="proto",method="x.v1.Unknown/Get",operation="x.v1.Unknown/Get"} 1',
    ]);
  });
});

describe('resets and GOAWAY', () => {
  test('resets by sender and HTTP/2 name; NO_ERROR after the response is early closure', async () => {
    const o = observer();
    run(o, { reset: { side: 'upstream', code: 7 } });
    run(o, { reset: { side: 'client', code: 8 } });
    run(o, { reset: { side: 'client', code: 8 } });
    run(o, { reset: { side: 'proxy', code: 2 } });
    run(o, { ...okGrpc, upstreamEndTime: 1009, reset: { side: 'upstream', code: 0 } });
    const text = await scrape(o);
    const method = 'direction="inbound",protocol="grpc",method="order.v1.OrderService/GetOrder"';
    assert.deepEqual(samples(text, 'rpcscope_stream_resets_total'), [
      `rpcscope_stream_resets_total{${method},side="upstream",error_code="REFUSED_STREAM"} 1`,
      `rpcscope_stream_resets_total{${method},side="client",error_code="CANCEL"} 2`,
      `rpcscope_stream_resets_total{${method},side="proxy",error_code="INTERNAL_ERROR"} 1`,
    ]);
    assert.deepEqual(samples(text, 'rpcscope_calls_total').map((l) => /code="(\w+)"/.exec(l)![1]), ['UNAVAILABLE', 'CANCELLED', 'INTERNAL', 'OK']);
  });

  test('GOAWAY by side and code name', async () => {
    const o = observer();
    o.goaway('client', 0);
    o.goaway('upstream', 11);
    o.goaway('proxy', 0);
    o.goaway('proxy', 0);
    o.goaway('upstream', 0x1234);
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_http2_goaways_total'), [
      'rpcscope_http2_goaways_total{side="client",error_code="NO_ERROR"} 1',
      'rpcscope_http2_goaways_total{side="upstream",error_code="ENHANCE_YOUR_CALM"} 1',
      'rpcscope_http2_goaways_total{side="proxy",error_code="NO_ERROR"} 2',
      'rpcscope_http2_goaways_total{side="upstream",error_code="INTERNAL_ERROR"} 1',
    ]);
  });
});

describe('deadlines', () => {
  test('who detected each miss, and the budget used', async () => {
    const o = observer();
    const budget = { header: 'grpc-timeout' as const, raw: '100m', ms: 100 };
    run(o, { ms: 50, deadline: budget, httpStatus: 200, grpcStatus: 4 });
    run(o, { ms: 150, deadline: budget, reset: { side: 'client', code: 8 } });
    run(o, { ms: 150, deadline: budget, httpStatus: 200, grpcStatus: 0 });
    run(o, { ms: 100, deadline: budget, deadlineEnforced: true, reset: { side: 'proxy', code: 8 } });
    run(o, { ms: 80, deadline: budget, httpStatus: 200, grpcStatus: 0 });
    run(o, { ms: 5, deadline: { header: 'grpc-timeout', raw: '0n', ms: 0 }, httpStatus: 200, grpcStatus: 4 });
    const text = await scrape(o);
    const method = 'direction="inbound",protocol="grpc",method="order.v1.OrderService/GetOrder"';
    assert.deepEqual(samples(text, 'rpcscope_deadline_exceeded_total'), [
      `rpcscope_deadline_exceeded_total{${method},detected_by="status"} 2`,
      `rpcscope_deadline_exceeded_total{${method},detected_by="client_cancel"} 1`,
      `rpcscope_deadline_exceeded_total{${method},detected_by="late_response"} 1`,
      `rpcscope_deadline_exceeded_total{${method},detected_by="proxy"} 1`,
    ]);
    const ratio = samples(text, 'rpcscope_deadline_used_ratio');
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_count{${method}} 5`), 'no ratio for a zero budget');
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_sum{${method}} 5.3`));
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_bucket{${method},le="0.75"} 1`));
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_bucket{${method},le="0.9"} 2`));
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_bucket{${method},le="1"} 3`));
    assert.ok(ratio.includes(`rpcscope_deadline_used_ratio_bucket{${method},le="1.5"} 5`));
    assert.ok(samples(text, 'rpcscope_deadline_requested_seconds').includes(`rpcscope_deadline_requested_seconds_count{${method}} 6`));
    const missed = samples(text, 'rpcscope_calls_total').filter((l) => l.includes('code="DEADLINE_EXCEEDED"'));
    assert.equal(missed.reduce((n, l) => n + Number(l.split(' ')[1]), 0), 5, 'each miss is a DEADLINE_EXCEEDED call');
    assert.deepEqual(samples(text, 'rpcscope_calls_without_deadline_total'), []);
  });

  test('an unparsable header counts as invalid and as no deadline', async () => {
    const o = observer();
    run(o, { ...okGrpc, deadline: { header: 'grpc-timeout', raw: '1 second', ms: undefined } });
    run(o, { protocol: 'connect', framed: false, encoding: 'json', httpStatus: 200, deadline: { header: 'connect-timeout-ms', raw: '-1', ms: undefined } });
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_deadline_header_invalid_total'), [
      'rpcscope_deadline_header_invalid_total{direction="inbound",protocol="grpc"} 1',
      'rpcscope_deadline_header_invalid_total{direction="inbound",protocol="connect"} 1',
    ]);
    assert.equal(samples(text, 'rpcscope_calls_without_deadline_total').length, 2);
    assert.deepEqual(samples(text, 'rpcscope_deadline_requested_seconds'), []);
  });
});

describe('connections', () => {
  test('open connections by side and version; lifetime and calls of closed ones', async () => {
    const o = observer();
    o.connectionOpened(connection());
    o.connectionOpened(connection({ id: 2 }));
    o.connectionOpened(connection({ id: 3, side: 'upstream', httpVersion: '1.1' }));
    o.connectionClosed(connection({ id: 2, openTime: 1_000, closeTime: 601_000, calls: 5_000 }));
    const text = await scrape(o);
    assert.deepEqual(samples(text, 'rpcscope_connections_active'), [
      'rpcscope_connections_active{side="downstream",http_version="2"} 1',
      'rpcscope_connections_active{side="upstream",http_version="1.1"} 1',
    ]);
    const calls = samples(text, 'rpcscope_connection_calls');
    assert.ok(calls.includes('rpcscope_connection_calls_sum{side="downstream",http_version="2"} 5000'));
    assert.ok(calls.includes('rpcscope_connection_calls_bucket{side="downstream",http_version="2",le="1000"} 0'));
    assert.ok(calls.includes('rpcscope_connection_calls_bucket{side="downstream",http_version="2",le="10000"} 1'));
    assert.ok(samples(text, 'rpcscope_connection_duration_seconds').includes('rpcscope_connection_duration_seconds_sum{side="downstream",http_version="2"} 600'));
    assert.ok(calls.includes('rpcscope_connection_calls_count{side="upstream",http_version="1.1"} 0'));
  });
});

describe('the series budget (docs/metrics.md "Detail levels and cost")', () => {
  async function exposition(detail?: MetricsDetail): Promise<string> {
    const o = observer(detail ? { detail } : {});
    for (const call of workloadCalls()) {
      const end = call.endTime;
      o.callStarted(call);
      call.endTime = end;
      o.callEnded(call);
    }
    return scrape(o);
  }
  const seriesOf = (text: string): number => text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length;

  test('the default level: at most 2,500 series and 400 KB for 100 gRPC methods × 3 codes + 20 REST routes', async () => {
    const text = await exposition();
    assert.ok(seriesOf(text) <= 2500, `${seriesOf(text)} series`);
    assert.ok(Buffer.byteLength(text) <= 400_000, `${Buffer.byteLength(text)} bytes`);
    assert.deepEqual(contractSamples(text).filter((l) => !l.startsWith('rpcscope_build_info')), contractSamples(await exposition('standard')).filter((l) => !l.startsWith('rpcscope_build_info')));
  });

  test('each level answers the same calls and bytes; full adds the distributions', async () => {
    const totals = (text: string, name: string): number =>
      contractSamples(text).filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const texts = await Promise.all(METRICS_DETAILS.map((d) => exposition(d)));
    const calls = workloadCalls();
    for (const text of texts) {
      assert.equal(totals(text, 'rpcscope_calls_total'), calls.length);
      assert.equal(totals(text, 'rpcscope_call_duration_seconds_count'), calls.length);
      assert.equal(totals(text, 'rpcscope_call_bytes_total'), calls.reduce((n, c) => n + c.requestBytes + c.responseBytes, 0));
    }
    const [basic, standard, full] = texts.map(seriesOf) as [number, number, number];
    assert.ok(basic < standard && standard * 4 < full, `basic ${basic}, standard ${standard}, full ${full}`);
    assert.equal(totals(texts[2]!, 'rpcscope_payload_bytes_count'), 2 * calls.length);
  });
});

describe('per-endpoint series of endpoints that left', () => {
  const upstreamSeries = (text: string, endpoint: string): string[] => contractSamples(text).filter((l) => l.startsWith('rpcscope_upstream_') && l.includes(`upstream="${endpoint}"`));

  test('are dropped --endpoint-series-ttl after a scrape found them gone, and give their room back', () => {
    let now = 0;
    let known = ['10.0.0.1:80', '10.0.0.2:80'];
    const o = observer({ knownEndpoints: () => known, endpointSeriesTtlMs: 60_000, clock: () => now });
    const up = connection({ side: 'upstream', peer: '10.0.0.1:80' });
    o.connectionOpened(up);
    run(o, { ...okGrpc, upstream: '10.0.0.1:80' });
    run(o, { ...okGrpc, upstream: '10.0.0.2:80' });
    known = ['10.0.0.2:80'];
    now = 1000;
    // Still draining: a connection open on it keeps its series, however long.
    assert.ok(upstreamSeries(o.render(), '10.0.0.1:80').length > 0);
    now = 500_000;
    assert.ok(upstreamSeries(o.render(), '10.0.0.1:80').length > 0);
    o.connectionClosed(up);
    // The scrape that finds it gone still exports its last values, and so does every one for the ttl.
    assert.match(o.render(), /rpcscope_upstream_calls_total\{upstream="10\.0\.0\.1:80",code="OK"\} 1/);
    now += 59_999;
    assert.ok(upstreamSeries(o.render(), '10.0.0.1:80').length > 0);
    now += 1;
    const after = o.render();
    assert.deepEqual(upstreamSeries(after, '10.0.0.1:80'), []);
    assert.ok(upstreamSeries(after, '10.0.0.2:80').length > 0, 'the endpoint still known keeps its series');
  });

  test('an endpoint that comes back before the ttl keeps its series and counts', () => {
    let now = 0;
    let known = ['10.0.0.1:80'];
    const o = observer({ knownEndpoints: () => known, endpointSeriesTtlMs: 60_000, clock: () => now });
    run(o, { ...okGrpc, upstream: '10.0.0.1:80' });
    known = [];
    o.render();
    now = 30_000;
    known = ['10.0.0.1:80'];
    o.render();
    known = [];
    now = 70_000;
    o.render();
    now = 100_000;
    assert.match(o.render(), /rpcscope_upstream_calls_total\{upstream="10\.0\.0\.1:80",code="OK"\} 1/, 'gone again for 30 s only');
  });

  test('with 1,000 endpoints churned through, new ones still get their own series instead of _OTHER', () => {
    let now = 0;
    let known: string[] = [];
    const o = observer({ knownEndpoints: () => known, endpointSeriesTtlMs: 1000, clock: () => now });
    for (let gen = 0; gen < 3; gen++) {
      // A rollout: the old pods leave the records, a scrape sees it, the ttl passes, the new pods are called.
      known = Array.from({ length: 600 }, (_, i) => `10.${gen}.${i >> 8}.${i & 255}:80`);
      o.render();
      now += 2000;
      o.render();
      for (const e of known) run(o, { ...okGrpc, upstream: e });
    }
    const text = o.render();
    assert.doesNotMatch(text, /upstream="_OTHER"/);
    assert.equal(contractSamples(text).filter((l) => l.startsWith('rpcscope_upstream_calls_total{')).length, 600, 'only the live generation');
  });

  test('are kept forever with a ttl of 0', () => {
    let now = 0;
    let known = ['10.0.0.1:80'];
    const o = observer({ knownEndpoints: () => known, endpointSeriesTtlMs: 0, clock: () => now });
    run(o, { ...okGrpc, upstream: '10.0.0.1:80' });
    known = [];
    o.render();
    now = 1e9;
    assert.ok(upstreamSeries(o.render(), '10.0.0.1:80').length > 0);
  });
});
