// Benchmark: what one OTLP export costs the event loop, beside one /metrics
// render, for the workload of series-workload.ts (100 gRPC methods × 3 status
// codes + 20 REST routes) at each detail level, and with exponential histograms: reading the cells into OTLP and
// encoding it as protobuf and as JSON, in milliseconds (median of 30) and bytes.
// An export runs once per OTEL_METRIC_EXPORT_INTERVAL (60 s by default), on a
// timer, never on a call. Prints figures; asserts nothing.
//   node --import tsx sidecar/test/observe/otlp-export.bench.ts
import { performance } from 'node:perf_hooks';
import { METRICS_DETAILS } from '../../src/config/schema.ts';
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { encodeJson, encodeProtobuf, type ExportMetricsServiceRequest } from '../../src/observe/otlp-metrics-encoding.ts';
import { OtlpMetricsReader } from '../../src/observe/otlp-metrics-reader.ts';
import { workloadCalls } from './series-workload.ts';

const RUNS = 30;

function median(run: () => unknown): number {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    run();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[RUNS >> 1]!;
}

console.log(`${'level'.padEnd(10)} ${'render ms'.padStart(10)} ${'text KB'.padStart(8)} ${'OTLP pb ms'.padStart(11)} ${'pb KB'.padStart(7)} ${'OTLP json ms'.padStart(13)} ${'json KB'.padStart(8)}`);
// Each level with explicit buckets, and `standard` with exponential histograms (OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION).
for (const [detail, exponential] of [...METRICS_DETAILS.map((d) => [d, false] as const), ['standard', true] as const]) {
  const observer = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, detail, exponentialHistograms: exponential });
  for (const call of workloadCalls()) {
    const end = call.endTime;
    observer.callStarted(call);
    call.endTime = end;
    observer.callEnded(call);
  }
  const reader = new OtlpMetricsReader('cumulative', Date.now(), observer.collect().callDuration);
  const request = (): ExportMetricsServiceRequest => ({ resourceMetrics: [{ resource: { attributes: [] }, scopeMetrics: [{ scope: { name: 'rpcscope', version: '0' }, metrics: reader.read(observer.collect().families, Date.now()) }] }] });
  const text = observer.render();
  const renderMs = median(() => observer.render());
  const pbMs = median(() => encodeProtobuf(request()));
  const jsonMs = median(() => encodeJson(request()));
  const kb = (n: number): string => (n / 1024).toFixed(0).padStart(8);
  console.log(
    `${(exponential ? `${detail.slice(0, 3)}, exp` : detail).padEnd(10)} ${renderMs.toFixed(2).padStart(10)} ${kb(Buffer.byteLength(text))} ${pbMs.toFixed(2).padStart(11)} ${kb(encodeProtobuf(request()).length).slice(1)} ${jsonMs.toFixed(2).padStart(13)} ${kb(encodeJson(request()).length)}`,
  );
  await observer.shutdown();
}
