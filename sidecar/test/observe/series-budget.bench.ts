// Benchmark: the series one sidecar exports, and the bytes of one scrape, per
// family, at each detail level, for the workload of series-workload.ts (100 gRPC
// methods × 3 status codes + 20 REST routes). The default level's budget is
// 2,500 series and 400 KB (docs/metrics.md "Detail levels and cost"). Prints
// figures; asserts nothing (the budget is asserted in metrics-observer.test.ts).
//   node --import tsx sidecar/test/observe/series-budget.bench.ts
import { createMetricsObserver } from '../../src/observe/metrics-observer.ts';
import type { MetricsObserver } from '../../src/observe/metrics-observer.ts';
import { METRICS_DETAILS } from '../../src/observe/metrics-detail.ts';
import { exposedFamilies } from './exposition-size.ts';
import { scrape } from './scrape.ts';
import { workloadCalls } from './series-workload.ts';

async function measure(level: string, make: () => MetricsObserver): Promise<void> {
  const observer = make();
  for (const call of workloadCalls()) {
    const end = call.endTime;
    observer.callStarted(call);
    call.endTime = end;
    observer.callEnded(call);
  }
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
}

for (const detail of METRICS_DETAILS) {
  await measure(`--metrics-detail ${detail}${detail === 'standard' ? ' (default)' : ''}`, () => createMetricsObserver({ maxMethods: 100, env: {}, detail }));
}
