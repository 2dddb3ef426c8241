// Micro-benchmark: what observing one call costs on the proxy's hot path
// (callStarted + callEnded), what a scrape costs, and, for comparison, recording
// a few of the same facts through OpenTelemetry instruments per call. Prints
// figures; asserts nothing.
//   node --import tsx sidecar/test/observe/observer.bench.ts
import { performance } from 'node:perf_hooks';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { CallRecord } from '../../src/call/call-record.ts';
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { composeObservers } from '../../src/call/observer.ts';
import { createTap } from '../../src/admin/tap.ts';
import { CALL_DURATION_SECONDS, PAYLOAD_BYTES } from '../../src/observe/buckets.ts';
import { OtlpMetricsReader } from '../../src/observe/otlp-metrics-reader.ts';
import { endedCall } from './records.ts';
import { scrape } from './scrape.ts';

const ROUNDS = 5;

/** A mix like a busy pod's: a dozen gRPC methods (with deadlines, some failing), REST calls on learned routes, a Connect stream. */
function workload(): CallRecord[] {
  const calls: CallRecord[] = [];
  for (let i = 0; i < 1000; i++) {
    const kind = i % 10;
    if (kind < 6) {
      calls.push(endedCall({
        path: `/order.v1.OrderService/Method${i % 12}`, httpStatus: 200, grpcStatus: i % 50 === 0 ? 14 : 0,
        requestMessages: 1, responseMessages: 1, requestBytes: 40 + i, responseBytes: 900 + i, ms: 1 + (i % 40),
        upstreamStartTime: 1000.1, upstreamEndTime: 1000.5 + (i % 40), upstream: `10.0.0.${i % 8}:50051`,
        deadline: { header: 'grpc-timeout', raw: '100m', ms: 100 },
      }));
    } else if (kind < 9) {
      calls.push(endedCall({
        protocol: 'rest', framed: false, encoding: 'json', httpVersion: '1.1', httpMethod: i % 2 ? 'GET' : 'POST',
        path: `/v1/orders/${1000 + i}/items/${i}`, httpStatus: i % 7 === 0 ? 404 : 200, requestBytes: 0, responseBytes: 1500, ms: 3,
      }));
    } else {
      calls.push(endedCall({
        protocol: 'connect', path: '/order.v1.OrderService/Watch', httpStatus: 200, connectEndStream: true,
        requestMessages: 1, responseMessages: 20, firstResponseMessageTime: 1001, ms: 500,
      }));
    }
  }
  return calls;
}

function measure(name: string, calls: number, observe: (call: CallRecord) => void): void {
  const records = workload();
  for (let i = 0; i < calls; i++) observe(records[i % records.length]!);
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) observe(records[i % records.length]!);
    perCall.push(((performance.now() - t0) * 1000) / calls);
  }
  perCall.sort((a, b) => a - b);
  console.log(`${name.padEnd(60)} ${perCall[Math.floor(ROUNDS / 2)]!.toFixed(2)} µs/call (median of ${ROUNDS} × ${calls} calls)`);
}

const observer = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
measure('metrics observer: callStarted + callEnded, every metric', 200_000, (call) => {
  const end = call.endTime;
  observer.callStarted(call);
  call.endTime = end;
  observer.callEnded(call);
});

// OTLP metrics: off; on with explicit buckets, which reads the same cells (here an
// export read every 20,000 calls, its share of the time counted in); on with
// exponential histograms, which every histogram cell then keeps beside its own.
// The rows' rounds are interleaved, so that a noisy machine slows them alike.
{
  const rows = [
    { name: 'OTLP off', observer: createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} }), read: undefined as OtlpMetricsReader | undefined },
    { name: 'OTLP on, explicit buckets (export read every 20k calls)', observer: createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} }), read: undefined as OtlpMetricsReader | undefined },
    { name: 'OTLP on, exponential histograms (export read every 20k calls)', observer: createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, exponentialHistograms: true }), read: undefined as OtlpMetricsReader | undefined },
  ];
  for (const row of rows.slice(1)) row.read = new OtlpMetricsReader('cumulative', 0, row.observer.collect().callDuration);
  const records = workload();
  const calls = 200_000;
  const perCall = rows.map(() => [] as number[]);
  for (let r = 0; r <= ROUNDS; r++) {
    rows.forEach((row, k) => {
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) {
        const call = records[i % records.length]!;
        const end = call.endTime;
        row.observer.callStarted(call);
        call.endTime = end;
        row.observer.callEnded(call);
        if (row.read !== undefined && i % 20_000 === 0) row.read.read(row.observer.collect().families, Date.now());
      }
      // Round 0 warms up.
      if (r > 0) perCall[k]!.push(((performance.now() - t0) * 1000) / calls);
    });
  }
  rows.forEach((row, k) => {
    const sorted = perCall[k]!.sort((a, b) => a - b);
    console.log(`${`metrics observer, ${row.name}`.padEnd(60)} ${sorted[Math.floor(ROUNDS / 2)]!.toFixed(2)} µs/call (median of ${ROUNDS} × ${calls} calls, interleaved)`);
  });
  await Promise.all(rows.map((row) => row.observer.shutdown()));
}

// The tap (/debug/tap) sits in the same composition: with nobody watching its
// callEnded tests one boolean; composed beside the metrics observer it should
// add nothing measurable to the line above.
const tap = createTap();
measure('tap observer alone, nobody watching', 2_000_000, (call) => tap.observer.callEnded(call));
for (const [name, observers] of [
  ['metrics observer, composed as the sidecar does (baseline)', [createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} })]],
  ['metrics observer + tap (nobody watching), composed', [createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} }), tap.observer]],
  ['metrics observer, --histograms native (native buckets beside the classic)', [createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, histograms: 'native' })]],
] as const) {
  const composed = composeObservers([...observers], () => {});
  measure(name, 200_000, (call) => {
    const end = call.endTime;
    composed.callStarted(call);
    call.endTime = end;
    composed.callEnded(call);
  });
}

// With tracing on, the latency buckets keep exemplars. The calls end on a clock that
// moves `step` ms per call; each has its span in a WeakMap, as call-tracing.ts keeps
// them. The first line is the same harness with tracing off, the baseline to subtract.
for (const [name, step, tracing] of [
  ['same clock and spans, tracing off (baseline)', 0.01, false],
  ['tracing on, 100k calls/s (exemplar updates at most 1/s per bucket)', 0.01, true],
  ['tracing on, worst case: every call updates its bucket\'s exemplar', 1000, true],
] as const) {
  const spans = new WeakMap<CallRecord, { traceId: string; spanId: string; traceFlags: number }>();
  const traced = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, spanOf: tracing ? (call) => spans.get(call) : undefined });
  let clock = 2000;
  let n = 0;
  measure(`metrics observer: ${name}`, 200_000, (call) => {
    if (!spans.has(call)) spans.set(call, { traceId: (n++).toString(16).padStart(32, '0'), spanId: '00f067aa0ba902b7', traceFlags: 1 });
    const ms = call.endTime - call.startTime;
    call.startTime = (clock += step) - ms;
    traced.callStarted(call);
    call.endTime = clock;
    traced.callEnded(call);
  });
  await traced.shutdown();
}

// Scraping: collection and serialization of a full guard's worth of methods.
const full = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
for (let m = 0; m < 100; m++) {
  for (const grpcStatus of [0, 5, 14]) {
    full.callEnded(endedCall({ path: `/order.v1.OrderService/Method${m}`, httpStatus: 200, grpcStatus, requestMessages: 1, responseMessages: 1, deadline: { header: 'grpc-timeout', raw: '1S', ms: 1000 } }));
  }
}
const scrapes: number[] = [];
let bytes = 0;
for (let r = 0; r < ROUNDS; r++) {
  const t0 = performance.now();
  bytes = (await scrape(full)).length;
  scrapes.push(performance.now() - t0);
}
scrapes.sort((a, b) => a - b);
console.log(`${'scrape of 100 methods × 3 codes over HTTP'.padEnd(60)} ${scrapes[Math.floor(ROUNDS / 2)]!.toFixed(1)} ms (${(bytes / 1024).toFixed(0)} KiB)`);
scrapes.length = 0;
for (let r = 0; r < ROUNDS; r++) {
  const t0 = performance.now();
  bytes = (await scrape(full, 'application/openmetrics-text;version=1.0.0')).length;
  scrapes.push(performance.now() - t0);
}
scrapes.sort((a, b) => a - b);
console.log(`${'the same scrape in OpenMetrics text'.padEnd(60)} ${scrapes[Math.floor(ROUNDS / 2)]!.toFixed(1)} ms (${(bytes / 1024).toFixed(0)} KiB)`);

// The same scrape while calls keep ending on the same observer (batches of 100 per
// turn of the event loop): the scrape's time, and the longest the loop stalled —
// what a proxied call arriving during the scrape would wait.
const load = workload();
let loading = true;
let served = 0;
const pump = (): void => {
  if (!loading) return;
  for (let i = 0; i < 100; i++) full.callEnded(load[served++ % load.length]!);
  setImmediate(pump);
};
setImmediate(pump);
const underLoad: number[] = [];
const stalls: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  let last = performance.now();
  let stall = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  await scrape(full);
  underLoad.push(performance.now() - t0);
  clearInterval(tick);
  stalls.push(Math.max(stall, performance.now() - last));
}
loading = false;
underLoad.sort((a, b) => a - b);
stalls.sort((a, b) => a - b);
const mid = Math.floor(ROUNDS / 2);
console.log(`${'the same scrape under load (calls ending meanwhile)'.padEnd(60)} ${underLoad[mid]!.toFixed(1)} ms, longest event-loop stall ${stalls[mid]!.toFixed(1)} ms (medians; ${served} calls observed meanwhile)`);
await full.shutdown();

class NoopReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}
const provider = new MeterProvider({ readers: [new NoopReader()] });
const meter = provider.getMeter('bench');
const counter = meter.createCounter('rpcscope_calls_total');
const duration = meter.createHistogram('rpcscope_call_duration_seconds', { advice: { explicitBucketBoundaries: CALL_DURATION_SECONDS } });
const payload = meter.createHistogram('rpcscope_payload_bytes', { advice: { explicitBucketBoundaries: PAYLOAD_BYTES } });
// The same label sets the observer produces (REST paths templated), so that the
// instruments see as few attribute sets as the cells do.
const label = (call: CallRecord) => (call.protocol === 'rest' ? `${call.httpMethod} /v1/orders/{id}/items/{id}` : call.path.slice(1));
measure('for comparison, OpenTelemetry record() of only 4 of those', 10_000, (call) => {
  const method = label(call);
  const base = { direction: call.direction, protocol: call.protocol, encoding: call.encoding, method, operation: method };
  counter.add(1, { ...base, code: 'OK', http_status: String(call.httpStatus) });
  duration.record((call.endTime - call.startTime) / 1000, { ...base, code: 'OK' });
  payload.record(call.requestBytes, { ...base, flow: 'request' });
  payload.record(call.responseBytes, { ...base, flow: 'response' });
});

await Promise.all([observer.shutdown(), provider.shutdown()]);
