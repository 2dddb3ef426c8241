// Scrape-slices benchmark: the longest time one /metrics scrape holds the event
// loop, in CPU time, which other processes on the machine cannot inflate (the
// wall-clock stall of test/bench/scrape-stall.ts also counts the time the OS
// gave another process). The metrics observer the sidecar runs serves /metrics
// from a real HTTP server in this process, holding the series-budget workload
// (100 gRPC methods × 3 codes + 20 REST routes, sidecar/test/observe/series-workload.ts);
// before each scrape every call of the workload is recorded again, so every
// series has changed (the worst case for lines kept from the previous scrape;
// --changed 0.1 records a tenth of them, the first methods', as a quiet fleet would).
// curl scrapes, in its own process; a setImmediate ticker reads process.cpuUsage()
// on every turn of the loop, and the largest CPU time between two turns while a
// scrape is in flight is that scrape's longest stall. Prints figures; asserts nothing.
//
//   node --import tsx test/bench/scrape-slices.ts [--scrapes 40] [--changed 1] [--src DIR] [--accept TYPE] [--histograms native]
//
// --src loads the observer from another checkout's sidecar/src (e.g. main's,
// extracted with `git archive main sidecar/src | tar -x -C sidecar/.main` so
// that its imports resolve), for the "before".
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type { MetricsObserver, MetricsObserverOptions } from '../../sidecar/src/observe/metrics-observer.ts';
import { Router } from '../../sidecar/src/route/router.ts';
import { workloadCalls } from '../../sidecar/test/observe/series-workload.ts';
import { percentile } from '../support/admin-scrape.ts';

const { values: args } = parseArgs({ options: { scrapes: { type: 'string', default: '40' }, src: { type: 'string' }, accept: { type: 'string' }, changed: { type: 'string', default: '1' }, histograms: { type: 'string', default: 'classic' } } });
/** The share of the workload's calls recorded again before each scrape (1: every series changes). */
const CHANGED = Number(args.changed);
const src = args.src === undefined ? new URL('../../sidecar/src/', import.meta.url) : pathToFileURL(`${resolve(args.src)}/`);
const { createMetricsObserver } = (await import(new URL('observe/metrics-observer.ts', src).href)) as { createMetricsObserver: (o: MetricsObserverOptions) => MetricsObserver };

// --histograms native or both, with a protobuf --accept, measures the protobuf exposition.
const observer = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, histograms: args.histograms as MetricsObserverOptions['histograms'] });
function replay(share = 1): void {
  const calls = workloadCalls();
  for (const call of calls.slice(0, Math.round(calls.length * share))) {
    const end = call.endTime;
    observer.callStarted(call);
    call.endTime = end;
    observer.callEnded(call);
  }
}
replay();

/** A scrape is in flight, or ended since the ticker's last turn (a synchronous one ends before the ticker runs again). */
let scraping = false;
let inFlight = false;
const server = createServer((req, res) => {
  scraping = inFlight = true;
  res.once('close', () => (inFlight = false));
  observer.handleMetrics(req, res);
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;

// The ticker: CPU and wall time between two turns of the loop.
let maxCpuMs = 0;
let maxWallMs = 0;
let lastCpu = process.cpuUsage();
let lastWall = performance.now();
let ticking = true;
const tick = (): void => {
  const cpu = process.cpuUsage();
  const wall = performance.now();
  if (scraping) {
    maxCpuMs = Math.max(maxCpuMs, (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000);
    maxWallMs = Math.max(maxWallMs, wall - lastWall);
  }
  scraping = inFlight;
  lastCpu = cpu;
  lastWall = wall;
  if (ticking) setImmediate(tick);
};
setImmediate(tick);

function curl(): Promise<{ ms: number; bytes: number }> {
  return new Promise((ok, fail) => {
    const c = spawn('curl', ['-sS', '--fail', '-o', '/dev/null', '-w', '%{time_total} %{size_download}', ...(args.accept ? ['-H', `accept: ${args.accept}`] : []), url]);
    let out = '';
    c.stdout.on('data', (d: Buffer) => (out += d));
    c.once('exit', (code) => (code === 0 ? ok({ ms: Number(out.split(' ')[0]) * 1000, bytes: Number(out.split(' ')[1]) }) : fail(new Error(`curl exited ${code}`))));
  });
}

const cpuStalls: number[] = [];
const wallStalls: number[] = [];
const durations: number[] = [];
let bytes = 0;
const n = Number(args.scrapes);
for (let i = 0; i < n + 5; i++) {
  replay(CHANGED);
  // Let the ticker run a turn with nothing else to do before the scrape.
  await new Promise((r) => setTimeout(r, 5));
  maxCpuMs = 0;
  maxWallMs = 0;
  const r = await curl();
  if (i < 5) continue; // warm-up: the JIT, and the first scrape's label text
  cpuStalls.push(maxCpuMs);
  wallStalls.push(maxWallMs);
  durations.push(r.ms);
  bytes = r.bytes;
}
ticking = false;
server.close();
await observer.shutdown();

const f = (v: number): string => v.toFixed(2).padStart(7);
console.log(`observer from ${args.src ?? 'sidecar/src'}, ${n} scrapes of ${bytes} B${args.accept ? ` (accept: ${args.accept})` : ''}, ${CHANGED === 1 ? 'every series changed' : `${CHANGED * 100} % of the calls recorded again`} before each`);
console.log(`${''.padEnd(30)} ${'p50'.padStart(7)} ${'p90'.padStart(7)} ${'max'.padStart(7)}`);
console.log(`${'longest stall, CPU ms'.padEnd(30)} ${f(percentile(cpuStalls, 50))} ${f(percentile(cpuStalls, 90))} ${f(Math.max(...cpuStalls))}`);
console.log(`${'longest stall, wall ms'.padEnd(30)} ${f(percentile(wallStalls, 50))} ${f(percentile(wallStalls, 90))} ${f(Math.max(...wallStalls))}`);
console.log(`${'scrape, curl ms'.padEnd(30)} ${f(percentile(durations, 50))} ${f(percentile(durations, 90))} ${f(Math.max(...durations))}`);
console.log('CPU ms: process CPU time between two turns of the event loop while the scrape was in flight (garbage collection included)');
