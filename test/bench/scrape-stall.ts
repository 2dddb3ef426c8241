// Scrape-stall benchmark (issue 33, "A scrape never stalls calls"): does a
// /metrics scrape hold up the calls the sidecar carries? The real sidecar
// (sidecar/bin/rpcscope) proxies an HTTP/2 upstream in this process; it is
// filled with the series-budget workload's shape (100 gRPC methods × 3 status
// codes + 20 REST routes, half the methods with deadlines) at the default
// detail, then a c=1 loop of unary gRPC calls runs twice: alone, then while
// curl scrapes /metrics back to back. Inside the sidecar, a preloaded probe
// (NODE_OPTIONS --require) runs monitorEventLoopDelay at 1 ms resolution and
// writes the largest delay of every 100 ms window to a file. Prints, per
// phase, the largest event loop delay, the c=1 calls' p50/p99/p99.9/max, and
// the scrapes' duration; asserts nothing.
//
//   node --import tsx test/bench/scrape-stall.ts [--seconds 10] [--bundle FILE] [--accept TYPE]
//
// --bundle runs `node FILE` instead of bin/rpcscope: a bundle built from another
// commit (e.g. main's sidecar/dist/rpcscope.cjs, copied aside) gives the "before".
// Target: no delay above 5 ms while scrapes run (docs/metrics.md "Scrapes and the event loop").
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { RPCSCOPE_BIN } from '../support/sidecar-process.ts';
import { percentile } from '../support/admin-scrape.ts';
import { WORKLOAD_CODES, WORKLOAD_METHODS, WORKLOAD_ROUTES, WorkloadClient, startWorkloadUpstream } from '../support/workload-upstream.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    bundle: { type: 'string' },
    accept: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);

// The probe the sidecar preloads: plain CommonJS, no dependency, nothing of the sidecar touched.
const PROBE = `
const { monitorEventLoopDelay, PerformanceObserver } = require('node:perf_hooks');
const { appendFileSync } = require('node:fs');
const out = process.env.RPCSCOPE_LOOP_PROBE;
const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
let gcMax = 0;
new PerformanceObserver((list) => { for (const e of list.getEntries()) gcMax = Math.max(gcMax, e.duration); }).observe({ entryTypes: ['gc'] });
setInterval(() => {
  if (h.count > 0) appendFileSync(out, Date.now() + ' ' + h.max + ' ' + gcMax + '\\n');
  h.reset();
  gcMax = 0;
}, 100).unref();
`;

const upstream = await startWorkloadUpstream();

const dir = await mkdtemp(join(tmpdir(), 'rpcscope-scrape-stall-'));
const probeFile = join(dir, 'probe.cjs');
const delays = join(dir, 'delays');
await writeFile(probeFile, PROBE);
await writeFile(delays, '');

const sidecarArgs = ['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', upstream.url, '--upstream-protocol', 'http2', '--log-level', 'info'];
const [cmd, cmdArgs] = args.bundle === undefined ? [RPCSCOPE_BIN, sidecarArgs] : [process.execPath, [args.bundle, ...sidecarArgs]];
const sidecar = spawn(cmd, cmdArgs, {
  env: { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${probeFile}`, RPCSCOPE_LOOP_PROBE: delays },
  stdio: ['ignore', 'ignore', 'pipe'],
});
const started = await new Promise<{ listen: string; admin: string }>((resolve, reject) => {
  let log = '';
  sidecar.stderr!.on('data', (d: Buffer) => {
    log += d.toString();
    const line = log.split('\n').find((l) => l.includes('"rpcscope started"'));
    if (line !== undefined) resolve(JSON.parse(line));
  });
  sidecar.once('exit', (code) => reject(new Error(`rpcscope exited with ${code}:\n${log}`)));
});
const proxyUrl = `http://127.0.0.1:${started.listen.split(':').at(-1)}`;
const metricsUrl = `http://127.0.0.1:${started.admin.split(':').at(-1)}/metrics`;

const client = new WorkloadClient(proxyUrl);
await client.fill();

interface Scrape { ms: number; bytes: number }

/** One scrape by curl, in a process of its own, which times it. */
function scrape(): Promise<Scrape> {
  return new Promise((resolve, reject) => {
    const curl = spawn('curl', ['-sS', '--fail', '-o', '/dev/null', '-w', '%{time_total} %{size_download}', ...(args.accept ? ['-H', `accept: ${args.accept}`] : []), metricsUrl]);
    let out = '';
    curl.stdout.on('data', (d: Buffer) => (out += d));
    curl.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`curl exited ${code}`));
      const [s, b] = out.split(' ');
      resolve({ ms: Number(s) * 1000, bytes: Number(b) });
    });
  });
}

/** The c=1 loop for SECONDS, optionally with back-to-back scrapes beside it. */
async function phase(withScrapes: boolean): Promise<{ latencies: number[]; scrapes: Scrape[]; windowMaxMs: number[]; gcMaxMs: number }> {
  const latencies: number[] = [];
  const scrapes: Scrape[] = [];
  const from = Date.now();
  const until = from + SECONDS * 1000;
  const scraping = (async () => {
    while (withScrapes && Date.now() < until) scrapes.push(await scrape());
  })();
  for (let i = 0; Date.now() < until; i++) latencies.push(await client.grpc(i % WORKLOAD_METHODS, 0));
  await scraping;
  await new Promise((r) => setTimeout(r, 250));
  const to = Date.now();
  const lines = (await readFile(delays, 'utf8')).trim().split('\n').map((l) => l.split(' ').map(Number) as [number, number, number]);
  const inPhase = lines.filter(([at]) => at > from && at <= to);
  return { latencies, scrapes, windowMaxMs: inPhase.map(([, ns]) => ns / 1e6), gcMaxMs: Math.max(...inPhase.map(([, , gc]) => gc)) };
}

const f = (ms: number): string => ms.toFixed(2).padStart(8);
// A warm-up run of both, so that neither phase pays for the JIT.
await phase(true);
const quiet = await phase(false);
const scraped = await phase(true);
console.log(`rpcscope ${args.bundle ?? RPCSCOPE_BIN}, ${WORKLOAD_METHODS} methods × ${WORKLOAD_CODES.length} codes + ${WORKLOAD_ROUTES} routes, ${SECONDS} s a phase${args.accept ? `, accept: ${args.accept}` : ''}`);
console.log(`${'phase'.padEnd(16)} ${'calls'.padStart(7)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'p99.9 ms'.padStart(8)} ${'max ms'.padStart(8)} | loop delay: ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'max ms'.padStart(8)} ${'>5 ms'.padStart(6)} | ${'GC max ms'.padStart(9)} | scrapes`);
for (const [name, r] of [['no scrapes', quiet], ['during scrapes', scraped]] as const) {
  const l = r.latencies;
  const w = r.windowMaxMs;
  const over = w.filter((ms) => ms > 5).length;
  const s = r.scrapes.map((x) => x.ms);
  const scrapeText = s.length === 0 ? '-' : `${s.length}, ${percentile(s, 50).toFixed(1)} ms median, ${Math.max(...s).toFixed(1)} ms max, ${r.scrapes[0]!.bytes} B`;
  console.log(
    `${name.padEnd(16)} ${String(l.length).padStart(7)} ${f(percentile(l, 50))} ${f(percentile(l, 99))} ${f(percentile(l, 99.9))} ${f(Math.max(...l))} | ${''.padEnd(11)} ` +
      `${f(percentile(w, 50))} ${f(percentile(w, 99))} ${f(Math.max(...w))} ${`${((100 * over) / w.length).toFixed(1)}%`.padStart(6)} | ${f(r.gcMaxMs).padStart(9)} | ${scrapeText}`,
  );
}
console.log('loop delay: per 100 ms window inside the sidecar, the largest gap between two runs of a 1 ms timer (monitorEventLoopDelay; an idle loop reads about 1 ms); >5 ms: the share of windows with a larger one; GC max: the longest garbage collection pause (PerformanceObserver)');
console.log(`load average while measured: ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${availableParallelism()} cores (other processes' CPU shows as delay too)`);

client.close();
sidecar.kill('SIGTERM');
await new Promise((r) => sidecar.once('exit', r));
await upstream.close();
await rm(dir, { recursive: true, force: true });
