// An A/B of two builds of the sidecar on the balanced relay: the same three
// nghttpd endpoints, the same h2load shapes, the two bundles taking turns in
// each round, so that a change's effect is read beside its own baseline rather
// than across runs hours apart (the machine drifts more than most changes move).
// Each bundle runs as bin/rpcscope runs it (node --max-semi-space-size=4),
// pinned to core 0, h2load on core 1, as an outbound sidecar balancing gRPC
// unary 256 B calls round robin: saturation (c16 m10), 2,000 calls/s over 8
// connections one call at a time, and c=1, each after a warm-up of its shape.
// CPU per call is the sidecar's utime + stime over the phase's calls; c=1 also
// gives h2load's p50.
//
//   cp sidecar/dist/rpcscope.cjs /tmp/before.cjs    # before the change
//   node sidecar/build.mjs                           # after it
//   node --import tsx test/bench/ab.ts /tmp/before.cjs sidecar/dist/rpcscope.cjs [--rounds 3] [--phases saturation,rate,c1]
//       [--flags-a "..."] [--flags-b "..."]
//
// --flags-a, --flags-b: the Node flags each bundle runs with, in place of
// bin/rpcscope's (one bundle given twice compares two flag sets).
//
// The two take turns in each round, and which goes first turns round by round
// (an odd number of rounds lets A go first once more).
//
// Prints one Markdown row per bundle: each phase's median and its rounds; then,
// read round by round, the median of B less A and the rounds where B was lower
// and higher. A change of 2–3 µs in c=1's p50 needs about 60 rounds to show
// beside the machine's drift (a round's p50 moves by 20 µs or more).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { median } from './bench-report.ts';
import { cpuSeconds, freePort, LAUNCHER_NODE_OPTIONS, waitForPort } from './bench-stats.ts';
import { h2load } from './h2load.ts';
import { startNghttpd } from './upstreams.ts';
import { ONE_AT_A_TIME, workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
/** Options that take a value: what follows each is theirs, not a bundle. */
const VALUED = ['--rounds', '--phases', '--flags-a', '--flags-b'];
const bundles = args.filter((a, i) => !a.startsWith('--') && !VALUED.includes(args[i - 1]!));
const FLAGS = [value('--flags-a'), value('--flags-b')].map((f) => (f === undefined ? [...LAUNCHER_NODE_OPTIONS] : f.split(' ').filter(Boolean)));
for (const f of FLAGS) for (const flag of f) if (!flag.startsWith('--')) throw new Error(`--flags-a and --flags-b take Node flags (each starting --), got ${flag}`);
const ROUNDS = Number(value('--rounds') ?? 3);
const PHASES = (value('--phases') ?? 'saturation,rate,c1').split(',');
const KNOWN = ['saturation', 'rate', 'c1'];
if (bundles.length !== 2) throw new Error('give two bundles: node --import tsx test/bench/ab.ts A.cjs B.cjs');
for (const b of bundles) if (!existsSync(b)) throw new Error(`no bundle at ${b}`);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`--rounds must be a positive integer, got ${value('--rounds')}`);
for (const p of PHASES) if (!KNOWN.includes(p)) throw new Error(`--phases takes ${KNOWN.join(', ')}; got ${p}`);

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-ab-'));
const files = writeFiles(work);
const w = workloads(work, files, 2000, 2000).find((x) => x.id === 'grpc-256')!;
const endpoints = [await startNghttpd(files.docroot), await startNghttpd(files.docroot), await startNghttpd(files.docroot)];
/** Each phase's shape, its measured calls, and the calls of the unmeasured warm-up before it (as balanced.ts warms each load). */
const SHAPES: Record<string, { shape: readonly string[]; calls: number; warm: number }> = {
  saturation: { shape: w.saturation, calls: 60_000, warm: 10_000 },
  rate: { shape: w.spread, calls: 10_000, warm: 2_000 },
  c1: { shape: ONE_AT_A_TIME, calls: 5_000, warm: 500 },
};

/** Per bundle, per figure, the rounds' values. */
const figures = bundles.map(() => new Map<string, number[]>());
const add = (b: number, name: string, v: number): void => {
  const m = figures[b]!;
  m.set(name, [...(m.get(name) ?? []), v]);
};

try {
  for (let round = 1; round <= ROUNDS; round++) {
    // The first bundle of a round runs first in odd rounds and second in even ones: run in a fixed
    // order, B read 5 µs under A at c=1 in one run and 1 µs over it with the two given the other way round.
    for (const b of round % 2 === 1 ? [0, 1] : [1, 0]) {
      process.stderr.write(`round ${round}: ${bundles[b]}\n`);
      const port = await freePort();
      const sidecar = spawn('taskset', ['-c', '0', process.execPath, ...FLAGS[b]!, bundles[b]!, '--listen', `127.0.0.1:${port}`, '--admin', '127.0.0.1:0', '--mode', 'outbound', '--upstream', 'http://bench.test:80', '--endpoints', endpoints.map((e) => new URL(e.url).host).join(','), '--balance', 'round_robin', '--outbound-data-plane', 'relay', '--upstream-protocol', 'http2', '--log-level', 'warn'], { stdio: 'ignore' });
      try {
        await waitForPort(port, 'rpcscope');
        const url = `http://127.0.0.1:${port}${w.path}`;
        for (const phase of PHASES) {
          const { shape, calls, warm } = SHAPES[phase]!;
          h2load(url, shape, w.request, warm, '1');
          const before = cpuSeconds(sidecar.pid!);
          const load = h2load(url, shape, w.request, calls, '1');
          add(b, `${phase} CPU µs/call`, ((cpuSeconds(sidecar.pid!) - before) / (load.ok + load.failed)) * 1e6);
          if (phase === 'c1') add(b, 'c1 p50 µs', load.p50Us);
        }
      } finally {
        // A sidecar that exited already (a bad bundle) is not waited for.
        if (sidecar.exitCode === null && sidecar.signalCode === null) {
          const exited = new Promise((r) => sidecar.once('exit', r));
          sidecar.kill('SIGTERM');
          await exited;
        }
      }
    }
  }
} finally {
  for (const e of endpoints) e.stop();
}

const names = [...figures[0]!.keys()];
const cell = (xs: number[]): string => `${median(xs).toFixed(1)} (${xs.map((x) => x.toFixed(1)).join(', ')})`;
console.log(`| bundle | ${names.join(' | ')} |`);
console.log(`|---|${names.map(() => '---').join('|')}|`);
const label = (i: number): string => `${basename(bundles[i]!)}${value(i === 0 ? '--flags-a' : '--flags-b') === undefined ? '' : ` (${FLAGS[i]!.join(' ')})`}`;
bundles.forEach((_, i) => console.log(`| ${label(i)} | ${names.map((n) => cell(figures[i]!.get(n)!)).join(' | ')} |`));
console.log(`\nRound by round, B (${label(1)}) less A (${label(0)}):\n`);
console.log('| figure | median of B − A | B lower | B higher | rounds |');
console.log('|---|---|---|---|---|');
for (const n of names) {
  const a = figures[0]!.get(n)!;
  const d = figures[1]!.get(n)!.map((x, i) => x - a[i]!);
  console.log(`| ${n} | ${median(d).toFixed(1)} | ${d.filter((x) => x < 0).length} | ${d.filter((x) => x > 0).length} | ${d.length} |`);
}
