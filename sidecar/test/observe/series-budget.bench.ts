// Benchmark: the series one sidecar exports, and the bytes of one scrape, per
// family, at each detail level (and, per level, with --histograms native and
// both over the protobuf exposition, where a native histogram is one series), for the workload of series-workload.ts (100 gRPC
// methods × 3 status codes + 20 REST routes). The default level's budget is
// 2,500 series and 400 KB (docs/metrics.md "Detail levels and cost"). Prints
// figures; asserts nothing (the budget is asserted in metrics-observer.test.ts).
//   node --import tsx sidecar/test/observe/series-budget.bench.ts
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import type { MetricsObserver } from '../../src/observe/metrics-observer.ts';
import { METRICS_DETAILS } from '../../src/config/schema.ts';
import { exposedFamilies } from './exposition-size.ts';
import { scrape, scrapeBytes } from './scrape.ts';
import { workloadCalls } from './series-workload.ts';

const PROTOBUF = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited';
/** The families --histograms native gives native buckets. */
const NATIVE = ['rpcscope_call_duration_seconds', 'rpcscope_stream_duration_seconds', 'rpcscope_deadline_requested_seconds', 'rpcscope_deadline_used_ratio'];

function filled(make: () => MetricsObserver): MetricsObserver {
  const observer = make();
  for (const call of workloadCalls()) {
    const end = call.endTime;
    observer.callStarted(call);
    call.endTime = end;
    observer.callEnded(call);
  }
  return observer;
}

async function measure(level: string, make: (histograms?: 'native' | 'both') => MetricsObserver): Promise<void> {
  const observer = filled(make);
  const text = await scrape(observer);
  await observer.shutdown();
  const families = exposedFamilies(text);
  console.log(`\n${level}`);
  console.log(`${'family'.padEnd(44)} ${'series'.padStart(7)} ${'bytes'.padStart(10)}`);
  let series = 0;
  for (const f of [...families].sort((a, b) => b.bytes - a.bytes)) {
    series += f.series;
    console.log(`${f.name.padEnd(44)} ${String(f.series).padStart(7)} ${String(f.bytes).padStart(10)}`);
  }
  const bytes = Buffer.byteLength(text);
  console.log(`${'total'.padEnd(44)} ${String(series).padStart(7)} ${String(bytes).padStart(10)}  (${(bytes / 1024).toFixed(0)} KiB)`);
  // A native histogram is one series per label set where the classic one is a series per bucket, +Inf, _count and _sum.
  const histogramSets = NATIVE.reduce((n, name) => n + cellsOf(text, name), 0);
  const classicSeries = families.filter((f) => NATIVE.includes(f.name)).reduce((n, f) => n + f.series, 0);
  for (const mode of ['native', 'both'] as const) {
    const o = filled(() => make(mode));
    const { body } = await scrapeBytes(o, PROTOBUF);
    await o.shutdown();
    const s = mode === 'native' ? series - classicSeries + histogramSets : series + histogramSets;
    console.log(`${`protobuf, --histograms ${mode}`.padEnd(44)} ${String(s).padStart(7)} ${String(body.length).padStart(10)}  (${(body.length / 1024).toFixed(0)} KiB; ${histogramSets} native histograms${mode === 'both' ? ' beside the classic buckets, which Prometheus keeps only with scrape_classic_histograms (2.45+)' : ''})`);
  }
}

/** Label sets of a histogram family in a text exposition: its _count lines. */
function cellsOf(text: string, name: string): number {
  return text.split('\n').filter((l) => l.startsWith(`${name}_count`)).length;
}

for (const detail of METRICS_DETAILS) {
  await measure(`--metrics-detail ${detail}${detail === 'standard' ? ' (default)' : ''}`, (histograms) => createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, detail, histograms }));
}
