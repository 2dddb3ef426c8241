// Start-up benchmark: how long from exec to the "rpcscope started" line (both
// ports listening), and the resident memory once idle, for the built bundle
// (sidecar/bin/rpcscope, what the image runs) against the TypeScript sources
// through tsx (what development uses), on this Node and on Node 24 (what the
// image runs). The floor rows are Node itself with an HTTP/2 and an HTTP/1.1
// server listening and nothing else: what no sidecar written for Node can go
// under. Medians of several runs, one at a time.
//
//   node --import tsx test/bench/startup.ts [runs]
//
// Targets for the bundle on a 2-core machine: ≤ 0.4 s to listening, ≤ 60 MiB idle RSS.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { node24, NODE_24_VERSION } from './node24.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RUNS = Number(process.argv[2] ?? 7);
/** How long the sidecar idles before its RSS is read: start-up garbage collected, timers settled. */
const IDLE_MS = 3000;
// Nothing listens here: the sidecar connects to its upstream per call, not at start.
const ARGS = ['--listen', '127.0.0.1:0', '--admin', '127.0.0.1:0', '--upstream', 'http://127.0.0.1:9', '--log-level', 'info'];

/** Node with the two servers a sidecar needs listening, announcing itself as the sidecar does. */
const FLOOR = [
  '-e',
  "const h2 = require('node:http2'), h1 = require('node:http'); let n = 0; const up = () => ++n === 2 && process.stderr.write('\"rpcscope started\"\\n');" +
    "h2.createServer().listen(0, '127.0.0.1', up); h1.createServer().listen(0, '127.0.0.1', up);",
];
const here = `Node ${process.versions.node}`;
const VARIANTS: Record<string, [string, string[]]> = {
  [`bundle, ${here}`]: [`${ROOT}sidecar/bin/rpcscope`, ARGS],
  [`tsx, ${here}`]: [process.execPath, ['--import', 'tsx', `${ROOT}sidecar/src/main.ts`, ...ARGS]],
  [`floor, ${here}`]: [process.execPath, FLOOR],
};
const n24 = node24();
if ('bin' in n24) {
  VARIANTS[`bundle, Node ${NODE_24_VERSION}`] = [n24.bin, [`${ROOT}sidecar/dist/rpcscope.cjs`, ...ARGS]];
  VARIANTS[`floor, Node ${NODE_24_VERSION}`] = [n24.bin, FLOOR];
} else process.stderr.write(`no Node 24 rows: ${n24.error}\n`);

function rssMb(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return kb / 1024;
}

/** One start: seconds to listening, then MB resident after idling. */
async function once(cmd: string, args: string[]): Promise<{ seconds: number; rss: number }> {
  const t0 = performance.now();
  // bin/rpcscope execs node, so the pid is the sidecar's own.
  const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const seconds = await new Promise<number>((resolve, reject) => {
    child.stderr.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('"rpcscope started"')) resolve((performance.now() - t0) / 1000);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before listening:\n${log}`)));
  });
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const rss = rssMb(child.pid ?? 0);
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
  return { seconds, rss };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
};

const build = spawnSync(process.execPath, [`${ROOT}sidecar/build.mjs`, '--if-stale'], { stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

process.stdout.write(`rpcscope start-up, ${RUNS} runs each, RSS after ${IDLE_MS / 1000} s idle\n`);
process.stdout.write(`${'variant'.padEnd(24)} ${'listening (median, min–max)'.padEnd(30)} idle RSS (median, min–max)\n`);
for (const [name, [cmd, args]] of Object.entries(VARIANTS)) {
  const runs: { seconds: number; rss: number }[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once(cmd, args));
  const t = runs.map((r) => r.seconds);
  const m = runs.map((r) => r.rss);
  const time = `${median(t).toFixed(2)} s (${Math.min(...t).toFixed(2)}–${Math.max(...t).toFixed(2)})`;
  const mem = `${median(m).toFixed(1)} MiB (${Math.min(...m).toFixed(1)}–${Math.max(...m).toFixed(1)})`;
  process.stdout.write(`${name.padEnd(24)} ${time.padEnd(30)} ${mem}\n`);
}
