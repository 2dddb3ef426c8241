// The load benchmark: rpcscope's inbound data planes against the proxies a user
// would pick instead, side by side in one run, on fast upstreams (nghttpd for
// HTTP/2, a static nginx for HTTP/1.1) so the proxy's cost is what differs.
// Rows: direct, rpcscope relay and terminate, the minimal node:http2
// pass-through and a 1:1 byte pipe on net.Socket, Node's floor for any relay
// (each on Node 20, this `node`, and Node 24 from the npm registry), nginx
// (grpc_pass / proxy_pass), HAProxy (proto h2) and nghttpx.
// Workloads: gRPC unary 256 B (h2c, and TLS), the demo's 18-field order as
// gRPC and as REST JSON over HTTP/1.1, a 1,000-message server stream. Each
// proxy is pinned to core 0 and h2load to core 1; a proxy's CPU comes from
// /proc/<pid>/stat (utime + stime). Four loads: saturation, a fixed rate
// (h2load --rps), the same rate spread over 8 connections with one call at a
// time on each (a pod's everyday shape), and one call at a time (c=1), whose
// median latency less the direct one is the latency the proxy adds. Then, with
// strace installed, the proxy's system calls per call over a run of the spread
// shape (strace -c -f, every thread). Then each proxy fresh: idle RSS,
// and peak RSS with 1,000 server streams open at once, and (fresh again) with
// 1,000 HTTP/1.1 keep-alive connections carrying REST calls at once. Prints Markdown tables
// and writes JSON and Markdown under test/bench/results/. Figures to compare,
// not assertions.
//
//   node --import tsx test/bench/relay.ts [--rounds 3] [--calls 20000] [--rate 2000]
//       [--quick] [--only relay,nginx,grpc-256,...] [--node 20|24|both] [--no-pin] [--no-syscalls]
//
// --quick: 5,000 calls at saturation, 2 s at 1,000 calls/s, one round (minutes on a quiet machine).
// --only: the peers (direct, relay, terminate, relay-traced, terminate-traced,
// relay-otlp, terminate-otlp, floor, pipe, nginx, haproxy, nghttpx; the traced ones with
// tracing on, spans to a sink; the otlp ones with OTLP metrics pushed to a sink every second)
// and workloads (grpc-256, grpc-256-tls, grpc-order, rest-order-h1, stream-1000)
// to run; a list naming no peer keeps every peer, and likewise for workloads.
// The memory rows run for the peers named (all, without --only); `rss` adds them
// to a list that names only workloads. Ctrl-C stops the run with what it measured.
//
// The figures to quote come from a quiet machine (load average below the core
// count, printed with the tables) and this command, 30 to 40 minutes:
//   node --import tsx test/bench/relay.ts --rounds 3
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { checkpoint, cpuSeconds, interruptAtCheckpoints, Interrupted, interrupted, loadAverage, machine, peakRssMiB, rssMiB } from './bench-stats.ts';
import { loadTable, rowName, rssTable, summarize, type Phase, type RssRow, type Sample } from './bench-report.ts';
import { h2load } from './h2load.ts';
import { countSyscalls, straceInstalled } from './syscalls.ts';
import { benchNodes } from './node24.ts';
import { direct, haproxy, nghttpx, nginx, nodeFloor, nodePipe, rpcscope, type BenchContext, type Peer, type Route, type Target } from './peers.ts';
import { startNghttpd, startStaticNginx, type Upstream } from './upstreams.ts';
import { ONE_AT_A_TIME, STREAM_MESSAGES, workloads, writeFiles, type Workload } from './workloads.ts';

const args = process.argv.slice(2);
const flag = (name: string): boolean => args.includes(name);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const QUICK = flag('--quick');
const ROUNDS = Number(value('--rounds') ?? 1);
const CALLS = Number(value('--calls') ?? (QUICK ? 5000 : 20_000));
const RATE = Number(value('--rate') ?? (QUICK ? 1000 : 2000));
const NODES = value('--node') ?? 'both';
const ONLY = (value('--only') ?? '').split(',').filter(Boolean);
const PROXY_CORE = flag('--no-pin') ? undefined : '0';
const LOAD_CORE = flag('--no-pin') ? undefined : '1';
/** How long the fixed-rate phase lasts at most, s. */
const FIXED_SECONDS = QUICK ? 2 : 5;
/** Calls over which system calls are counted, at the spread shape. */
const SYSCALL_CALLS = QUICK ? 500 : 2000;
const STRACE = straceInstalled() && !flag('--no-syscalls');
/** 10 connections × 100 streams: the concurrency the memory row is read at. */
const CONCURRENT_STREAMS = 1000;

for (const [name, v] of [['--rounds', ROUNDS], ['--calls', CALLS], ['--rate', RATE]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${value(name)}`);
}

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-load-'));
const cert = makeSelfSignedCert();
const ctx: BenchContext = { work, certFile: cert.certFile, keyFile: cert.keyFile, proxyCore: PROXY_CORE };
const files = writeFiles(work);

const { nodes, node24Error } = benchNodes(NODES);
if (node24Error !== undefined) process.stderr.write(`Node 24 rows skipped: ${node24Error}\n`);

const allPeers: Peer[] = [
  direct,
  ...nodes.flatMap((n) => [
    rpcscope('relay', n.version, n.bin),
    rpcscope('terminate', n.version, n.bin),
    rpcscope('relay', n.version, n.bin, 'tracing'),
    rpcscope('terminate', n.version, n.bin, 'tracing'),
    rpcscope('relay', n.version, n.bin, 'otlp-metrics'),
    rpcscope('terminate', n.version, n.bin, 'otlp-metrics'),
  ]),
  ...nodes.map((n) => nodeFloor(n.version, n.bin)),
  ...nodes.map((n) => nodePipe(n.version, n.bin)),
  nginx,
  haproxy,
  nghttpx,
];
const allWorkloads = workloads(work, files, CALLS, RATE);
const peerKeys = new Set([...allPeers.map((p) => p.key), 'rss']);
const workloadIds = new Set(allWorkloads.map((w) => w.id));
const unknown = ONLY.filter((o) => !peerKeys.has(o) && !workloadIds.has(o));
if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (peers: ${[...peerKeys].join(', ')}; workloads: ${[...workloadIds].join(', ')})`);
const onlyPeers = ONLY.filter((o) => peerKeys.has(o) && o !== 'rss');
const onlyWorkloads = ONLY.filter((o) => workloadIds.has(o));
const peers = onlyPeers.length ? allPeers.filter((p) => p.key === 'direct' || onlyPeers.includes(p.key)) : allPeers;
const selected = onlyWorkloads.length ? allWorkloads.filter((w) => onlyWorkloads.includes(w.id)) : allWorkloads;
const runRss = !ONLY.length || ONLY.includes('rss') || onlyPeers.length > 0;

const upstreams: Upstream[] = [];
const h2c = await startNghttpd(files.docroot);
upstreams.push(h2c);
const h2tls = await startNghttpd(files.docroot, cert);
upstreams.push(h2tls);
const h1 = selected.some((w) => w.upstreamProto === 'h1') ? await startStaticNginx(work, files.docroot) : undefined;
if (h1) upstreams.push(h1);

function routeOf(w: Workload): Route {
  if (w.upstreamProto === 'h1') return { frontend: w.frontend, upstream: h1!.url, upstreamProto: 'h1', direct: h1!.url };
  return { frontend: w.frontend, upstream: h2c.url, upstreamProto: 'h2', direct: w.frontend === 'tls' ? h2tls.url : h2c.url };
}

function measure(t: Target, w: Workload, shape: readonly string[], calls: number): Phase {
  const c0 = t.pid ? cpuSeconds(t.pid) : 0;
  const load = h2load(t.url + w.path, shape, w.request, calls, LOAD_CORE);
  return { ...load, cpuUsPerCall: t.pid ? ((cpuSeconds(t.pid) - c0) / ((load.ok + load.failed) || calls)) * 1e6 : NaN };
}

const skipped = new Map<string, string>();
const errors: string[] = [];
async function started(p: Peer, route: Route): Promise<Target | undefined> {
  try {
    const t = await p.start(route, ctx);
    if (typeof t === 'string') skipped.set(p.name, t);
    return typeof t === 'string' ? undefined : t;
  } catch (err) {
    errors.push(`${p.name}${p.node ? ` (Node ${p.node})` : ''}: ${(err as Error).message}`);
    return undefined;
  }
}

const samples: Sample[] = [];
/** The most frequent system calls of each workload and proxy, in the last round that counted them. */
const topSyscalls = new Map<string, [string, number][]>();
const rss: RssRow[] = [];
const t0 = Date.now();
const loadAtStart = loadAverage();
const date = new Date();
const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
const file = join(resultsDir, `load-${date.toISOString().replace(/[:.]/g, '-')}.json`);

interruptAtCheckpoints();
try {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const w of selected) {
      for (const p of peers) {
        await checkpoint();
        const t = await started(p, routeOf(w));
        if (!t) continue;
        process.stderr.write(`round ${round}: ${w.id} ${p.name}${p.node ? ` (Node ${p.node})` : ''}\n`);
        try {
          // Warm the JIT and the connections before measuring.
          h2load(t.url + w.path, w.saturation, w.request, Math.ceil(w.calls / 4), LOAD_CORE);
          await checkpoint();
          const saturation = measure(t, w, w.saturation, w.calls);
          await checkpoint();
          const fixedRate = measure(t, w, w.fixedRate, Math.min(w.calls, w.rate * FIXED_SECONDS));
          await checkpoint();
          // HTTP/1.1's fixed rate is already spread one call per connection: measured once.
          const spread = w.spread.join(' ') === w.fixedRate.join(' ') ? fixedRate : measure(t, w, w.spread, Math.min(w.calls, w.rate * FIXED_SECONDS));
          await checkpoint();
          const serial = measure(t, w, ONE_AT_A_TIME, w.serialCalls);
          await checkpoint();
          // Last, so that strace slows no measured phase.
          let syscallsPerCall = NaN;
          if (STRACE && t.pid) {
            const counted = await countSyscalls(t.pid, () => h2load(t.url + w.path, w.spread, w.request, SYSCALL_CALLS, LOAD_CORE));
            syscallsPerCall = counted.count.total / (counted.result.ok + counted.result.failed || SYSCALL_CALLS);
            topSyscalls.set(`${w.id}\0${p.name}\0${p.node ?? ''}`, counted.count.top);
          }
          samples.push({ workload: w.id, target: p.name, node: p.node ?? '', round, saturation, fixedRate, spread, serial, syscallsPerCall });
        } catch (err) {
          if (err instanceof Interrupted) throw err;
          errors.push(`${w.id}, ${p.name}${p.node ? ` (Node ${p.node})` : ''}: ${(err as Error).message.split('\n')[0]}`);
        } finally {
          await t.stop();
        }
      }
      // Written after every workload, so that a long run that is cut short keeps its figures.
      report(true);
    }
  }
  if (runRss) await measureMemory();
} catch (err) {
  if (!(err instanceof Interrupted)) throw err;
  errors.push(`interrupted by ${interrupted()}: the tables hold what was measured before`);
} finally {
  for (const u of upstreams) u.stop();
}
report();
if (interrupted()) process.exitCode = 130;

/** Each proxy fresh: its RSS idle, then its peak with CONCURRENT_STREAMS server streams open at once. */
async function measureMemory(): Promise<void> {
  const stream = allWorkloads.find((w) => w.id === 'stream-1000')!;
  for (const p of peers.filter((x) => x.key !== 'direct')) {
    await checkpoint();
    const t = await started(p, routeOf(stream));
    if (!t) continue;
    process.stderr.write(`memory: ${p.name}${p.node ? ` (Node ${p.node})` : ''}\n`);
    try {
      await new Promise((r) => setTimeout(r, 1000));
      await checkpoint();
      const idleMiB = rssMiB(t.pid!);
      const load = h2load(t.url + stream.path, ['-c', String(CONCURRENT_STREAMS / 100), '-m', '100'], stream.request, QUICK ? CONCURRENT_STREAMS : 2 * CONCURRENT_STREAMS, LOAD_CORE);
      const row: RssRow = { target: p.name, node: p.node ?? '', idleMiB, peakMiB: peakRssMiB(t.pid!), failed: load.failed };
      rss.push(row);
      await t.stop();
      row.h1PeakMiB = await h1Peak(p, row);
    } catch (err) {
      if (err instanceof Interrupted) throw err;
      errors.push(`memory, ${p.name}: ${(err as Error).message.split('\n')[0]}`);
    } finally {
      await t.stop();
    }
  }
}

/**
 * The proxy fresh once more: its peak RSS with CONCURRENT_STREAMS HTTP/1.1
 * keep-alive connections at once, each carrying REST GETs of the order one at a
 * time (5 each), to the static nginx. Undefined where the proxy takes no HTTP/1.1.
 */
async function h1Peak(p: Peer, row: RssRow): Promise<number | undefined> {
  const rest = allWorkloads.find((w) => w.id === 'rest-order-h1')!;
  if (!h1) return undefined;
  await checkpoint();
  const t = await started(p, routeOf(rest));
  if (!t) return undefined;
  try {
    await new Promise((r) => setTimeout(r, 1000));
    const load = h2load(t.url + rest.path, ['-c', String(CONCURRENT_STREAMS), '-m', '1'], rest.request, 5 * CONCURRENT_STREAMS, LOAD_CORE);
    row.failed += load.failed;
    return peakRssMiB(t.pid!);
  } finally {
    await t.stop();
  }
}

/** Tables and files from what was measured so far; `partial` writes them without printing. */
function report(partial = false): void {
  const summary = summarize(samples);
  const m = machine();
  const header = [
    `### Load benchmark, ${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${m.cpu}, ${m.cores} cores, Linux ${m.kernel}; Node ${nodes.map((n) => n.version).join(' and ')} for the Node rows; ` +
      `${PROXY_CORE === undefined ? 'nothing pinned' : `proxies on core ${PROXY_CORE}, h2load on core ${LOAD_CORE}, upstreams unpinned`}; ` +
      `${ROUNDS === 1 ? 'one round' : `medians of ${ROUNDS} rounds`}, ${CALLS} calls at saturation (c16 m10; HTTP/1.1 c32), ${RATE} calls/s fixed rate, c=1 for the added p50. ` +
      `CPU per call is the proxy process's utime + stime (10 ms ticks) over the calls; ×nginx is the row's figure over nginx's in the same table. ` +
      `${STRACE ? `System calls per call: strace -c -f on every thread of the proxy over ${SYSCALL_CALLS} calls at the spread shape, after the timed phases. ` : 'System calls not counted (strace not installed, or --no-syscalls). '}` +
      `Load average ${loadAtStart} at the start, ${loadAverage()} at the end${Math.max(loadAtStart, loadAverage()) > m.cores ? ': other work shared the cores, so the figures are noisy' : ''}.`,
  ].join('\n');
  const tables = selected
    .filter((w) => summary.some((s) => s.workload === w.id))
    .map((w) => loadTable(w.title, w.rate, w.fixedShape, summary.filter((s) => s.workload === w.id)));
  if (rss.length) tables.push(rssTable(CONCURRENT_STREAMS, rss));
  const syscallNotes = [...topSyscalls].map(([key, top]) => {
    const [workload, target, node] = key.split('\0') as [string, string, string];
    return `- syscalls, ${workload}, ${rowName(target, node)}: ${top.map(([name, n]) => `${name} ${(n / SYSCALL_CALLS).toFixed(1)}`).join(', ')} per call`;
  });
  const notes = [
    ...syscallNotes,
    ...[...skipped].map(([name, why]) => `- ${name} skipped: ${why}`),
    ...errors.map((e) => `- error: ${e}`),
    `- ${Math.round((Date.now() - t0) / 1000)} s; command: node --import tsx test/bench/relay.ts ${args.join(' ')}`.trimEnd(),
  ];
  const markdown = [header, ...tables, notes.join('\n')].join('\n\n') + '\n';

  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    file,
    JSON.stringify(
      {
        date: date.toISOString(),
        machine: m,
        command: `node --import tsx test/bench/relay.ts ${args.join(' ')}`.trimEnd(),
        nodes: nodes.map((n) => n.version),
        loadAverage: { start: loadAtStart, end: loadAverage() },
        settings: { rounds: ROUNDS, calls: CALLS, rate: RATE, proxyCore: PROXY_CORE, loadCore: LOAD_CORE, concurrentStreams: CONCURRENT_STREAMS, streamMessages: STREAM_MESSAGES },
        workloads: selected.map(({ id, title, path, calls, rate, serialCalls, saturation, fixedRate, spread }) => ({ id, title, path, calls, rate, serialCalls, saturation, fixedRate, spread })),
        topSyscalls: Object.fromEntries(topSyscalls),
        summary,
        rss,
        skipped: Object.fromEntries(skipped),
        errors,
        samples,
      },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(file.replace(/\.json$/, '.md'), markdown);
  if (!partial) process.stdout.write(`\n${markdown}\nwritten: ${file} (and .md)\n`);
}
