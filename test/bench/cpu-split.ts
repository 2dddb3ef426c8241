// Where each proxy's CPU per call goes, side by side: the balanced benchmark's
// setup (gRPC unary 256 B to three nghttpd endpoints, round robin; proxies on
// core 0, h2load on core 1), with `perf record -e cpu-clock -g` on each proxy
// process while a fixed number of calls pass, sorted into the same buckets for
// a Node proxy and a C one (cpu-split-report.ts: kernel, the proxy's own code,
// Node's JavaScript, V8 builtins, garbage collection, libuv, the runtime,
// libraries) and µs per call each. cpu-clock is a software event: it samples
// where hardware counters are not exposed (this machine's KVM guest), and
// perf's kernel frames show what the system calls cost (sending to a loopback
// peer runs its receive path and wakes it, in the sender's time).
//
// The Node rows run with --perf-basic-prof (NODE_OPTIONS), so that perf names
// each JavaScript function; the figures to compare are the buckets, the
// symbols below them say where to look next. perf's own overhead is in every
// row alike (a sample every 250 µs at the default 4,000 Hz).
//
//   node --import tsx test/bench/cpu-split.ts [--shape rate|saturation|c1] [--calls 20000]
//       [--only balanced,pipe,nginx,haproxy,nghttpx] [--node 20|24|both] [--frequency 4000]
//
// --shape rate: 2,000 calls/s over 8 connections, one call at a time on each
// (the everyday shape, after 10 s of it unmeasured); saturation: h2load -c 16 -m 10;
// c1: one call at a time on one connection, after 10 s of the fixed rate and
// 3,000 calls at c=1 unmeasured (balanced.ts's order), with h2load's p50 under
// the trace beside each row. At c=1 the endpoint mostly runs on the proxy's
// core, so much of this CPU is on the call's way; what a proxy does after the
// answer's write, while h2load reads it on the other core, is not.
// Needs perf (Debian linux-perf) and the right to trace the proxies (root, or
// kernel.perf_event_paranoid ≤ 1). Prints Markdown and writes it under test/bench/results/.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { loadAverage, machine } from './bench-stats.ts';
import { cpuSplit, splitTable, topTable, type SplitRow } from './cpu-split-report.ts';
import { h2load } from './h2load.ts';
import { benchNodes } from './node24.ts';
import { haproxy, nghttpx, nginx, nodePipe, rpcscopeOutbound, type Peer, type Route } from './peers.ts';
import { startNghttpd, type Upstream } from './upstreams.ts';
import { ONE_AT_A_TIME, workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const SHAPE = value('--shape') ?? 'rate';
const CALLS = Number(value('--calls') ?? 20_000);
const FREQUENCY = Number(value('--frequency') ?? 4000);
const ONLY = (value('--only') ?? 'balanced,pipe,nginx,haproxy,nghttpx').split(',').filter(Boolean);
const RATE = 2000;
/** Unmeasured calls of the measured shape first: 10 s of the fixed rate (the JIT settles on the paths a quiet load takes), or as many at saturation. */
const WARM_CALLS = RATE * 10;

if (SHAPE !== 'rate' && SHAPE !== 'saturation' && SHAPE !== 'c1') throw new Error(`--shape must be rate, saturation or c1, got ${SHAPE}`);
for (const [name, v] of [['--calls', CALLS], ['--frequency', FREQUENCY]] as const) {
  if (!Number.isInteger(v) || v < 100) throw new Error(`${name} must be an integer of at least 100, got ${value(name)}`);
}
if (spawnSync('sh', ['-c', 'command -v perf'], { stdio: 'ignore' }).status !== 0) throw new Error('perf is not installed (apt-get install linux-perf)');

// perf names JavaScript functions from the /tmp/perf-<pid>.map each Node proxy writes.
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --perf-basic-prof`.trim();

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-cpu-split-'));
const cert = makeSelfSignedCert();
const ctx = { work, certFile: cert.certFile, keyFile: cert.keyFile, proxyCore: '0' };
const files = writeFiles(work);
const w = workloads(work, files, CALLS, RATE).find((x) => x.id === 'grpc-256')!;
const shape = SHAPE === 'rate' ? w.spread : SHAPE === 'c1' ? ONE_AT_A_TIME : w.saturation;
/** c=1 follows the fixed rate, as in balanced.ts, and a window's worth of calls at c=1 goes unmeasured first. */
const C1_WARM_CALLS = 3000;
const { nodes } = benchNodes(value('--node') ?? '24');

/** The peers and the executable perf names their own code by. */
const all: [Peer, string][] = [
  ...nodes.flatMap((n): [Peer, string][] => [
    [rpcscopeOutbound('relay', n.version, n.bin), 'node'],
    [nodePipe(n.version, n.bin), 'node'],
  ]),
  [nginx, 'nginx'],
  [haproxy, 'haproxy'],
  [nghttpx, 'nghttpx'],
];
const unknown = ONLY.filter((o) => !all.some(([p]) => p.key === o));
if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (peers: ${[...new Set(all.map(([p]) => p.key))].join(', ')})`);
const peers = all.filter(([p]) => ONLY.includes(p.key));

const upstreams: Upstream[] = [];
for (let i = 0; i < 3; i++) upstreams.push(await startNghttpd(files.docroot));
const route: Route = { frontend: 'h2c', upstream: upstreams[0]!.url, upstreamProto: 'h2', direct: upstreams[0]!.url, endpoints: upstreams.map((u) => u.url) };

const perfReport = (data: string, extra: string[]): string => {
  const r = spawnSync('perf', ['report', '-i', data, '--stdio', '-g', 'none', ...extra], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`perf report failed: ${r.stderr}`);
  return r.stdout;
};

/**
 * What --perf-basic-prof leaves of a stopped Node proxy: its /tmp/perf-<pid>.map,
 * and the isolate-…-<pid>-v8.log files V8 opens in the proxy's working directory
 * (this script's, or the bench directory for the byte pipe; one per isolate).
 */
function forgetMaps(pid: number): void {
  rmSync(`/tmp/perf-${pid}.map`, { force: true });
  for (const dir of new Set([process.cwd(), dirname(fileURLToPath(import.meta.url))])) {
    for (const f of readdirSync(dir)) if (new RegExp(`^isolate-0x[0-9a-f]+-${pid}-v8\\.log$`).test(f)) rmSync(join(dir, f), { force: true });
  }
}

const rows: SplitRow[] = [];
const notes: string[] = [];
const loadAtStart = loadAverage();
try {
  for (const [p, binary] of peers) {
    const name = p.node ? `${p.name} (Node ${p.node})` : p.name;
    const t = await p.start(route, ctx);
    if (typeof t === 'string') {
      notes.push(`${name}: ${t}`);
      continue;
    }
    try {
      process.stderr.write(`${name}\n`);
      h2load(t.url + w.path, SHAPE === 'c1' ? w.spread : shape, w.request, WARM_CALLS, '1');
      if (SHAPE === 'c1') h2load(t.url + w.path, ONE_AT_A_TIME, w.request, C1_WARM_CALLS, '1');
      const data = join(work, `${p.key}-${p.node ?? ''}.perf`);
      const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', String(FREQUENCY), '-g', '-p', String(t.pid), '-o', data], { stdio: 'ignore' });
      // perf attaches to every thread before the load starts.
      await new Promise((r) => setTimeout(r, 500));
      const load = h2load(t.url + w.path, shape, w.request, CALLS, '1');
      const exited = new Promise((r) => perf.once('exit', r));
      perf.kill('SIGINT');
      await exited;
      const self = perfReport(data, ['--no-children', '-F', 'sample,dso,sym', '-t', '\t']);
      const children = perfReport(data, ['--children', '--sort', 'sym']);
      rows.push({ name, calls: load.ok + load.failed, frequency: FREQUENCY, split: cpuSplit(self, children, binary) });
      if (load.failed > 0) notes.push(`${name}: ${load.failed} calls failed`);
      if (SHAPE === 'c1') notes.push(`${name}: h2load p50 ${load.p50Us} µs under the trace`);
    } finally {
      await t.stop();
      if (t.pid) forgetMaps(t.pid);
    }
  }
} finally {
  for (const u of upstreams) await u.stop();
}

const m = machine();
const what = SHAPE === 'rate' ? '2,000 calls/s over 8 connections, one call at a time on each' : SHAPE === 'c1' ? 'one call at a time on one connection (c=1)' : 'saturation (h2load -c 16 -m 10)';
const warmed = SHAPE === 'c1' ? `${WARM_CALLS} at the fixed rate and ${C1_WARM_CALLS} at c=1` : String(WARM_CALLS);
let md = `### Where the CPU per call goes, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC\n\n`;
md += `${m.cpu}, ${m.cores} cores, Linux ${m.kernel}; gRPC unary 256 B (h2c) through each proxy (core 0) to three nghttpd, round robin; ${what}, ${CALLS} calls measured after ${warmed} unmeasured; perf record -e cpu-clock -F ${FREQUENCY} -g on the proxy process (every thread). Buckets are self time and add up to the total; the kernel paths are inclusive and overlap the kernel bucket. Load average ${loadAtStart.toFixed(2)} at the start, ${loadAverage().toFixed(2)} at the end.\n\n`;
md += splitTable(rows) + '\n';
for (const r of rows) md += topTable(r) + '\n';
for (const n of notes) md += `- ${n}\n`;
md += `- command: node --import tsx test/bench/cpu-split.ts ${args.join(' ')}`.trimEnd() + '\n';
// JavaScript symbols name the bundle by its path: the record names it from the checkout's root, wherever that was.
md = md.replaceAll(fileURLToPath(new URL('../../', import.meta.url)), '');
process.stdout.write(md);
const dir = fileURLToPath(new URL('results/', import.meta.url));
mkdirSync(dir, { recursive: true });
const file = join(dir, `cpu-split-${SHAPE}-${new Date().toISOString().replace(/[:.]/g, '-')}.md`);
writeFileSync(file, md);
process.stderr.write(`wrote ${file}\n`);
process.exit(0);
