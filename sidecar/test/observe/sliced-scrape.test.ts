// A scrape served in slices, from lines kept between scrapes, says exactly what
// a sidecar that was never scraped before says: two observers see the same
// calls of the series-budget workload, one scraped between every batch (so its
// series keep and reuse their lines), the other only at the end; in both text
// formats, their bodies hold the same series with the same values, line for line.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMetricsObserver, type MetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import type { CallRecord } from '../../src/call/call-record.ts';
import { contractSamples, scrape } from './scrape.ts';
import { workloadCalls } from './series-workload.ts';

const OPENMETRICS = 'application/openmetrics-text;version=1.0.0';

function replay(o: MetricsObserver, calls: CallRecord[]): void {
  for (const call of calls) {
    const end = call.endTime;
    o.callStarted(call);
    call.endTime = end;
    o.callEnded(call);
  }
}

for (const accept of [undefined, OPENMETRICS]) {
  test(`${accept === undefined ? 'Prometheus text' : 'OpenMetrics'}: lines kept between scrapes never go stale`, async () => {
    const scraped = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
    const fresh = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {} });
    // Three batches: all of the workload, then a third of it twice (some series change, most do not).
    const batches = [workloadCalls(), workloadCalls().filter((_, i) => i % 3 === 0), workloadCalls().filter((_, i) => i % 3 === 1)];
    let between = '';
    for (const batch of batches) {
      replay(scraped, batch);
      between = await scrape(scraped, accept);
    }
    for (const batch of batches) replay(fresh, batch);
    const last = contractSamples(await scrape(scraped, accept));
    const once = contractSamples(await scrape(fresh, accept));
    assert.ok(once.length > 2000, `the workload's series: ${once.length}`);
    assert.deepEqual(last, once);
    // And the last scrape between batches already said it: nothing changed since.
    assert.deepEqual(contractSamples(between), once);
    // The synchronous rendering (what an OTLP export collects from) agrees with the served one.
    assert.deepEqual(contractSamples(scraped.render(accept !== undefined)), once);
    await Promise.all([scraped.shutdown(), fresh.shutdown()]);
  });
}
