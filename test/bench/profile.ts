// Where the sidecar's CPU goes on an inbound path: runs the built sidecar under
// Node's --cpu-prof (pinned to core 0) in front of nghttpd while h2load (core 1)
// drives gRPC unary 256 B calls at saturation (--workload grpc), or in front of
// a static nginx while h2load --h1 drives REST GETs of the 1.2 KB order over
// HTTP/1.1 keep-alive on 32 connections (--workload rest), or as an outbound
// sidecar balancing gRPC unary 256 B calls over three nghttpd endpoints at
// 2,000 calls/s spread over 8 connections, one call at a time on each, the
// everyday shape (--workload balanced; --plane relay is the balanced relay), then reads the
// profile and attributes its samples: each sidecar function to its TypeScript
// file through the bundle's source map, Node's own JavaScript by module, and
// the native buckets V8 reports (socket writes, garbage collection, the rest
// of the runtime). Only the samples of the load's own duration count, not the
// start-up; idle time is left out: shares are of busy time.
//
//   node --import tsx test/bench/profile.ts [--plane relay|terminate] [--workload grpc|rest|balanced]
//       [--shape rate|saturation] [--node 20|24] [--calls 100000]
//
// --shape: the balanced workload at its fixed rate (the default) or at saturation (h2load -c 16 -m 10).
//
// Prints Markdown tables and writes them, with the .cpuprofile, under
// test/bench/results/. Open the .cpuprofile in Chrome DevTools (Performance)
// for the call tree.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, freePort, LAUNCHER_NODE_OPTIONS, loadAverage, waitForPort } from './bench-stats.ts';
import { h2load } from './h2load.ts';
import { node24, NODE_24_VERSION } from './node24.ts';
import { startNghttpd, startStaticNginx } from './upstreams.ts';
import { writeFiles } from './workloads.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BUNDLE = join(ROOT, 'sidecar', 'dist', 'rpcscope.cjs');
const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const PLANE = value('--plane') ?? 'relay';
const NODE = value('--node') ?? '24';
const CALLS = Number(value('--calls') ?? 100_000);
const WORKLOAD = value('--workload') ?? 'grpc';
/** The balanced workload's shape: the everyday fixed rate, or saturation (c16 m10, as the balanced benchmark's first phase). */
const SHAPE = value('--shape') ?? 'rate';
if (SHAPE !== 'rate' && SHAPE !== 'saturation') throw new Error(`--shape must be rate or saturation, got ${SHAPE}`);
if (WORKLOAD !== 'grpc' && WORKLOAD !== 'rest' && WORKLOAD !== 'balanced') throw new Error(`--workload must be grpc, rest or balanced, got ${WORKLOAD}`);
if (PLANE !== 'relay' && PLANE !== 'terminate') throw new Error(`--plane must be relay or terminate, got ${PLANE}`);
if (NODE !== '20' && NODE !== '24') throw new Error(`--node must be 20 or 24, got ${NODE}`);
if (!Number.isInteger(CALLS) || CALLS < 1000) throw new Error(`--calls must be an integer of at least 1000, got ${value('--calls')}`);

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface Profile {
  startTime: number;
  endTime: number;
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

/** V8's pseudo-frames and the native functions that stand for work done outside JavaScript. */
const NATIVE: Record<string, string> = {
  '(garbage collector)': 'garbage collection',
  '(program)': 'runtime (V8 and Node native code outside a JavaScript frame)',
  writeBuffer: 'socket writes (one syscall per write)',
  writev: 'socket writes (one syscall per write)',
  writeUtf8String: 'socket writes (one syscall per write)',
};

/**
 * Samples of the last `windowUs` of the profile only: the load, which ends just
 * before the sidecar is stopped, and not the start-up (module loading, compiling).
 */
function attribute(profile: Profile, map: SourceMap, windowUs: number): { byPlace: Map<string, number>; byFunction: Map<string, number>; busy: number } {
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byPlace = new Map<string, number>();
  const byFunction = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, t: number): void => void m.set(k, (m.get(k) ?? 0) + t);
  let busy = 0;
  let at = profile.startTime;
  const from = profile.endTime - windowUs;
  for (let i = 0; i < profile.samples.length; i++) {
    const f = frames.get(profile.samples[i] ?? -1);
    const t = profile.timeDeltas[i] ?? 0;
    at += t;
    if (at < from || f === undefined || f.functionName === '(idle)') continue;
    busy += t;
    let place: string;
    let fn = f.functionName || '(anonymous)';
    if (f.url.endsWith('rpcscope.cjs')) {
      const e = map.findEntry(f.lineNumber, f.columnNumber);
      const source = 'originalSource' in e && e.originalSource ? e.originalSource : undefined;
      place = source ? relative(join(ROOT, 'sidecar'), fileURLToPath(new URL(source, `file://${BUNDLE}`))) : 'bundled dependencies';
      fn = `${fn} (${place === 'bundled dependencies' ? place : `${basename(place)}:${'originalLine' in e ? e.originalLine + 1 : '?'}`})`;
    } else if (f.url.startsWith('node:')) {
      place = `Node: ${f.url.slice(5).replace(/^internal\//, '').split('/')[0]}`;
      fn = `${fn} (${f.url})`;
    } else place = NATIVE[f.functionName] ?? `native: ${fn}`;
    add(byPlace, place, t);
    add(byFunction, fn, t);
  }
  return { byPlace, byFunction, busy };
}

function table(title: string, m: Map<string, number>, busy: number, rows: number): string {
  const sorted = [...m].sort((a, b) => b[1] - a[1]).slice(0, rows);
  return [`| ${title} | share of busy CPU |`, '|---|---:|', ...sorted.map(([k, t]) => `| ${k} | ${((100 * t) / busy).toFixed(1)} % |`)].join('\n');
}

const nodeBin = NODE === '20' ? process.execPath : (() => {
  const n = node24();
  if ('error' in n) throw new Error(n.error);
  return n.bin;
})();
const nodeVersion = spawnSync(nodeBin, ['--version'], { encoding: 'utf8' }).stdout.trim();
if (spawnSync(process.execPath, [join(ROOT, 'sidecar', 'build.mjs'), '--if-stale'], { stdio: 'inherit' }).status !== 0) process.exit(1);

const work = mkdtempSync(join(tmpdir(), 'rpcscope-profile-'));
const files = writeFiles(work);
const upstream = WORKLOAD === 'rest' ? await startStaticNginx(work, files.docroot) : await startNghttpd(files.docroot);
/** The other two endpoints of the balanced workload. */
const more = WORKLOAD === 'balanced' ? [await startNghttpd(files.docroot), await startNghttpd(files.docroot)] : [];
const port = await freePort();
const admin = await freePort();
const profDir = join(work, 'prof');
// With bin/rpcscope's own Node options (its young generation semi-space, its garbage collected on the main thread), as the sidecar runs.
const argv = [...LAUNCHER_NODE_OPTIONS, '--cpu-prof', `--cpu-prof-dir=${profDir}`, BUNDLE, '--listen', `127.0.0.1:${port}`, '--admin', `127.0.0.1:${admin}`, '--upstream', upstream.url, '--data-plane', PLANE, '--http1-data-plane', PLANE, '--log-level', 'warn'];
if (WORKLOAD === 'rest') argv.push('--upstream-protocol', 'http1');
if (WORKLOAD === 'balanced') {
  const endpoints = [upstream, ...more].map((u) => new URL(u.url).host).join(',');
  argv.push('--mode', 'outbound', '--endpoints', endpoints, '--balance', 'round_robin', '--outbound-data-plane', PLANE, '--upstream-protocol', 'http2');
}
const sidecar = spawn('taskset', ['-c', '0', nodeBin, ...argv], { stdio: ['ignore', 'ignore', 'inherit'] });
try {
  await waitForPort(port, 'rpcscope');
  const request = WORKLOAD === 'rest' ? ['--h1', '-H', 'accept: application/json'] : ['-d', join(work, 'unary.bin'), '-H', 'content-type: application/grpc', '-H', 'te: trailers'];
  const cpu0 = cpuSeconds(sidecar.pid ?? 0);
  const load =
    WORKLOAD === 'grpc'
      ? h2load(`http://127.0.0.1:${port}/bench.v1.BenchService/Unary`, ['-c', '16', '-m', '10'], request, CALLS, '1')
      : WORKLOAD === 'balanced'
        ? h2load(`http://127.0.0.1:${port}/bench.v1.BenchService/Unary`, SHAPE === 'rate' ? ['-c', '8', '-m', '1', '--rps', '250'] : ['-c', '16', '-m', '10'], request, CALLS, '1')
        : h2load(`http://127.0.0.1:${port}/v1/orders/ord-000001`, ['-c', '32', '-m', '1'], request, CALLS, '1');
  const cpuUs = ((cpuSeconds(sidecar.pid ?? 0) - cpu0) * 1e6) / load.ok;
  const exited = new Promise((r) => sidecar.once('exit', r));
  const stopAt = performance.now();
  sidecar.kill('SIGTERM');
  await exited;
  // The load's own duration, and the drain after it.
  const windowUs = (load.ok / load.rps) * 1e6 + (performance.now() - stopAt) * 1e3;
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error('the sidecar wrote no .cpuprofile');
  const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8')) as Profile;
  const map = new SourceMap(JSON.parse(readFileSync(`${BUNDLE}.map`, 'utf8')));
  const { byPlace, byFunction, busy } = attribute(profile, map, windowUs);
  const out = [
    `# rpcscope CPU profile: ${PLANE}, ${nodeVersion}`,
    '',
    (WORKLOAD === 'grpc'
      ? `${load.ok} gRPC unary 256 B calls at saturation (h2load -c 16 -m 10, core 1) through the sidecar (core 0) to nghttpd: `
      : WORKLOAD === 'balanced'
        ? `${load.ok} gRPC unary 256 B calls ${SHAPE === 'rate' ? 'at 2,000/s over 8 connections, one at a time on each (h2load -c 8 -m 1 --rps 250, core 1)' : 'at saturation (h2load -c 16 -m 10, core 1)'}, through an outbound sidecar (core 0) balancing them round robin over three nghttpd: `
        : `${load.ok} REST GETs of the 1.2 KB order over HTTP/1.1 keep-alive at saturation (h2load --h1 -c 32, core 1) through the sidecar (core 0) to a static nginx: `) +
      `${Math.round(load.rps)} calls/s, ${cpuUs.toFixed(1)} µs of sidecar CPU per call (from /proc, profiler on), ${load.failed} failed; load average ${loadAverage().toFixed(2)}.`,
    '',
    table('where (source file, Node module, native)', byPlace, busy, 20),
    '',
    table('function (self time)', byFunction, busy, 30),
    '',
  ].join('\n');
  process.stdout.write(`${out}\n`);
  const results = join(ROOT, 'test', 'bench', 'results');
  mkdirSync(results, { recursive: true });
  const stem = `profile-${PLANE}${WORKLOAD === 'grpc' ? '' : WORKLOAD === 'rest' ? '-rest-h1' : SHAPE === 'rate' ? '-balanced' : '-balanced-saturation'}-node${NODE}`;
  writeFileSync(join(results, `${stem}.md`), out);
  copyFileSync(join(profDir, file), join(results, `${stem}.cpuprofile`));
  process.stdout.write(`wrote test/bench/results/${stem}.md and .cpuprofile (Node ${NODE === '24' ? NODE_24_VERSION : process.versions.node})\n`);
} finally {
  if (sidecar.exitCode === null) sidecar.kill('SIGKILL');
  upstream.stop();
  for (const u of more) u.stop();
}
