// Acceptance: a scrape rendered in slices (docs/metrics.md "Scrapes and the
// event loop") is still whole and correct while calls flow through the sidecar
// beside it. The real `sidecar/bin/rpcscope` is filled with the series-budget
// workload (100 gRPC methods × 3 codes + 20 REST routes), then scraped
// repeatedly, in both text formats, while four clients keep calling; promtool
// (Prometheus's own exposition linter) reads every body, and each body must
// hold every series of the workload with histograms that add up.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { settledScrape } from '../support/admin-scrape.ts';
import { parseExposition, select, sum, type Sample } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { WORKLOAD_CODES, WORKLOAD_METHODS, WORKLOAD_ROUTES, WorkloadClient, startWorkloadUpstream, workloadMethod, type WorkloadUpstream } from '../support/workload-upstream.ts';

const CODE_NAMES: Record<number, string> = { 0: 'OK', 5: 'NOT_FOUND', 14: 'UNAVAILABLE' };
const OPENMETRICS = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';

/** `promtool check metrics` on a body: its complaints, '' when it has none that are errors. */
function promtoolErrors(body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d));
    p.stderr.on('data', (d: Buffer) => (out += d));
    p.once('error', reject);
    // Exit 3 is lint advice only (e.g. a counter's naming); 1 is a body it could not parse.
    p.once('exit', (code) => resolve(code === 1 ? out || 'promtool exited 1' : ''));
    p.stdin.end(body);
  });
}

/** Every histogram series: buckets never go down, and +Inf equals _count. */
function checkHistograms(samples: Sample[], family: string): number {
  const byLabels = new Map<string, Sample[]>();
  for (const s of select(samples, `${family}_bucket`)) {
    const { le: _, ...rest } = s.labels;
    const key = JSON.stringify(rest);
    byLabels.set(key, [...(byLabels.get(key) ?? []), s]);
  }
  for (const [key, buckets] of byLabels) {
    for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value, `${family}${key}: cumulative buckets go down`);
    const inf = buckets.find((b) => b.labels.le === '+Inf');
    const count = select(samples, `${family}_count`, JSON.parse(key) as Record<string, string>).find((s) => Object.keys(s.labels).length === Object.keys(JSON.parse(key) as object).length);
    assert.equal(inf?.value, count?.value, `${family}${key}: le="+Inf" and _count differ`);
  }
  return byLabels.size;
}

describe('a scrape while calls flow', () => {
  let upstream: WorkloadUpstream;
  let sc: SidecarProcess;
  let client: WorkloadClient;

  before(async () => {
    upstream = await startWorkloadUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http2', '--log-level', 'info']);
    client = new WorkloadClient(sc.url);
    await client.fill();
  });

  after(async () => {
    client?.close();
    await sc?.stop();
    await upstream?.close();
  });

  it('is whole and adds up, in both formats, with every series of 100 methods × 3 codes + 20 routes', async () => {
    let flowing = true;
    const made = [0, 0, 0, 0];
    // Four clients on methods 0 to 3, OK, for as long as the scrapes run.
    const loops = made.map(async (_, k) => {
      while (flowing) {
        await client.grpc(k, 0);
        made[k]!++;
      }
    });
    const bodies: { accept: string | undefined; text: string }[] = [];
    let previous = -1;
    for (let round = 0; round < 6; round++) {
      const accept = round % 2 === 0 ? undefined : OPENMETRICS;
      const res = await fetch(`${sc.adminUrl}/metrics`, accept === undefined ? undefined : { headers: { accept } });
      assert.equal(res.status, 200);
      const text = await res.text();
      assert.equal(Number(res.headers.get('content-length')), Buffer.byteLength(text), 'content-length is the body\'s');
      bodies.push({ accept, text });
      // Calls counted only go up from one scrape to the next.
      const looped = sum(parseExposition(text.replace(/ # \{.*$/gm, '').replace(/^# EOF$/m, '')), 'rpcscope_calls_total', { method: workloadMethod(0), code: 'OK' });
      assert.ok(looped >= previous, `calls_total went down: ${looped} after ${previous}`);
      previous = looped;
    }
    flowing = false;
    await Promise.all(loops);
    assert.ok(made.every((n) => n > 0), `the clients made calls during the scrapes: ${made.join(', ')}`);

    for (const { accept, text } of bodies) {
      const format = accept === undefined ? 'Prometheus text' : 'OpenMetrics';
      assert.equal(await promtoolErrors(text), '', `${format}: promtool reads the whole body`);
      if (accept !== undefined) assert.ok(text.endsWith('# EOF\n'), 'OpenMetrics: the body ends with # EOF');
      else assert.match(text, /^nodejs_eventloop_lag_p99_seconds \S+\n$/m, 'Prometheus text: the last family is there');
      const samples = parseExposition(text.replace(/ # \{.*$/gm, '').replace(/^# EOF$/m, ''));
      for (let i = 0; i < WORKLOAD_METHODS; i++) {
        for (const code of WORKLOAD_CODES) {
          const n = sum(samples, 'rpcscope_calls_total', { method: workloadMethod(i), code: CODE_NAMES[code]! });
          assert.ok(n >= 3, `${format}: ${workloadMethod(i)} ${CODE_NAMES[code]} counted ${n} times, at least the fill's 3`);
        }
      }
      const restMethods = new Set(select(samples, 'rpcscope_calls_total', { protocol: 'rest' }).map((s) => s.labels.method));
      assert.equal(restMethods.size, WORKLOAD_ROUTES, `${format}: every REST route: ${[...restMethods].join(' ')}`);
      assert.equal(checkHistograms(samples, 'rpcscope_call_duration_seconds'), WORKLOAD_METHODS + WORKLOAD_ROUTES, `${format}: one latency histogram per method and route`);
      checkHistograms(samples, 'rpcscope_deadline_requested_seconds');
      checkHistograms(samples, 'rpcscope_upstream_call_duration_seconds');
    }

    // With the calls done, the last figures are exact: the fill's 3, and every call the loops made.
    const settled = await settledScrape(sc.adminUrl);
    for (let k = 0; k < made.length; k++) {
      assert.equal(sum(settled, 'rpcscope_calls_total', { method: workloadMethod(k), code: 'OK' }), 3 + made[k]!, `${workloadMethod(k)}: every call counted once`);
      assert.equal(sum(settled, 'rpcscope_call_duration_seconds_count', { method: workloadMethod(k) }), 9 + made[k]!, `${workloadMethod(k)}: every call in the latency histogram`);
    }
  });
});
