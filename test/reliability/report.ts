// The reliability report in one command:
//
//   node --import tsx test/reliability/report.ts [--soak] [FILE.test.ts ...]
//
// runs every test/reliability/*.test.ts and test/cluster/*.test.ts (the network
// faults, as root; or the files named), one at a time so
// that each measures the machine alone, with RPCSCOPE_RELIABILITY_FIGURES set:
// every figure a test reports (test/support/reliability-figures.ts) lands in one
// file. Then it writes test/reliability/REPORT.md: the machine and the date,
// pass or fail per file, the figures by section (load held, faults survived,
// bad inputs tried, interop) and the total of calls lost, which must be 0.
// The report runs the long versions CI does not: backpressure with 1 GiB bodies
// (RPCSCOPE_BACKPRESSURE_MIB=1024, unless set), and with --soak the 10-minute
// soak (RPCSCOPE_SOAK=1). Exit status 1 when a file failed or a call was lost.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ReliabilityFigure } from '../support/reliability-figures.ts';

const DIR = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(DIR, '../..');
const REPORT = path.join(DIR, 'REPORT.md');

const args = process.argv.slice(2);
const soak = args.includes('--soak');
const named = args.filter((a) => !a.startsWith('--'));
const CLUSTER = path.join(ROOT, 'test/cluster');
const testsIn = (dir: string): string[] => readdirSync(dir).filter((f) => f.endsWith('.test.ts')).sort().map((f) => path.join(dir, f));
const files = named.length > 0 ? named.map((f) => path.resolve(f)) : [...testsIn(DIR), ...testsIn(CLUSTER)];

type Figure = ReliabilityFigure & { file: string };
interface FileResult {
  file: string;
  passed: boolean;
  tests: number;
  pass: number;
  fail: number;
  seconds: number;
}

/** Runs one test file with the TAP reporter, its output passed through; its counts from the TAP summary. */
function runFile(file: string, env: NodeJS.ProcessEnv): Promise<FileResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', file], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d;
      process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    child.on('close', (code) => {
      const count = (name: string): number => Number(new RegExp(`^# ${name} (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
      resolve({ file: path.relative(ROOT, file), passed: code === 0, tests: count('tests'), pass: count('pass'), fail: count('fail'), seconds: (performance.now() - started) / 1000 });
    });
  });
}

function machine(): string[] {
  const cpus = os.cpus();
  const release = existsSync('/etc/os-release') ? /^PRETTY_NAME="?([^"\n]*)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1] : undefined;
  return [
    `- CPU: ${cpus[0]?.model.trim() ?? 'unknown'}, ${cpus.length} cores`,
    `- memory: ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `- Node.js: ${process.version}`,
    `- sidecar data plane for inbound HTTP/2: ${process.env.RPCSCOPE_DATA_PLANE ?? 'relay'} (${process.env.RPCSCOPE_DATA_PLANE ? 'RPCSCOPE_DATA_PLANE' : 'the default; RPCSCOPE_DATA_PLANE=terminate for the other'})`,
    `- OS: ${release ?? os.type()} (kernel ${os.release()}, ${os.arch()})`,
    `- load average when the run began: ${os.loadavg().map((l) => l.toFixed(2)).join(', ')} (the machine may be shared: figures of time are what it gave)`,
  ];
}

const SECTIONS: Array<[ReliabilityFigure['section'], string]> = [
  ['load', 'Load held'],
  ['faults', 'Faults survived'],
  ['network-faults', 'Network faults'],
  ['bad-input', 'Bad inputs tried'],
  ['interop', 'Interop'],
];

const cell = (text: string): string => text.replace(/\|/g, '\\|');

/** A section: per test file, a table of its figures, one row each, in the order they were reported. */
function section(title: string, figures: Figure[]): string[] {
  const lines = [`## ${title}`, ''];
  if (figures.length === 0) return [...lines, 'No figures were reported in this section.', ''];
  for (const file of [...new Set(figures.map((f) => f.file))]) {
    lines.push(`### ${path.basename(file)}`, '', '| scenario | figure | value |', '|---|---|---|');
    for (const f of figures.filter((g) => g.file === file)) {
      lines.push(`| ${cell(f.scenario)} | ${cell(f.name)} | ${cell(`${f.value}${f.unit ? ` ${f.unit}` : ''}`)} |`);
    }
    lines.push('');
  }
  return lines;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rpcscope-reliability-'));
const figuresFile = path.join(tmp, 'figures.jsonl');
writeFileSync(figuresFile, '');
const env: NodeJS.ProcessEnv = {
  ...process.env,
  RPCSCOPE_RELIABILITY_FIGURES: figuresFile,
  RPCSCOPE_BACKPRESSURE_MIB: process.env.RPCSCOPE_BACKPRESSURE_MIB ?? '1024',
  ...(soak ? { RPCSCOPE_SOAK: '1' } : {}),
};
const began = new Date();
const header = machine();
const results: FileResult[] = [];
for (const file of files) {
  console.log(`\n=== ${path.relative(ROOT, file)}`);
  results.push(await runFile(file, env));
}
const figures = readFileSync(figuresFile, 'utf8')
  .split('\n')
  .filter((l) => l !== '')
  .map((l) => JSON.parse(l) as Figure)
  .map((f) => ({ ...f, file: path.relative(ROOT, f.file) }));
rmSync(tmp, { recursive: true, force: true });

const lost = figures.filter((f) => f.name === 'calls lost');
const lostTotal = lost.reduce((acc, f) => acc + Number(f.value), 0);
const failed = results.filter((r) => !r.passed);

const lines = [
  '# rpcscope reliability report',
  '',
  `Written by \`node --import tsx test/reliability/report.ts${soak ? ' --soak' : ''}${named.length > 0 ? ` ${named.join(' ')}` : ''}\` on ${began.toISOString().slice(0, 16).replace('T', ' ')} UTC, taking ${Math.round((Date.now() - began.getTime()) / 60_000)} min. ` +
    `Long versions: backpressure with ${env.RPCSCOPE_BACKPRESSURE_MIB} MiB bodies, the soak ${soak ? 'for 10 minutes' : 'for 60 s (`--soak`: 10 minutes)'}. ` +
    'Each figure is what one test measured on this machine, in this run; the tests assert counts and bounds, never times.',
  '',
  'Reading the figures: latencies and event-loop delays include the time a process waited for a CPU. On a shared machine (see the load ' +
    'average below) that can be seconds while the sidecar itself used a fraction of a core: read them beside its CPU figure. Peak RSS is ' +
    "the kernel's (VmHWM, or VmRSS sampled every 100 ms for one phase) for the sidecar process alone; the upstreams and clients run in other processes.",
  '',
  '## Machine',
  '',
  ...header,
  '',
  '## Calls lost',
  '',
  `**${lostTotal}** in all (must be 0): the sum of every \`calls lost\` figure, ${lost.length} scenarios.`,
  '',
  ...(lost.length > 0 ? ['| scenario | calls lost |', '|---|---|', ...lost.map((f) => `| ${cell(f.scenario)} | ${f.value} |`), ''] : []),
  '## Test files',
  '',
  `${results.length - failed.length} of ${results.length} files passed.`,
  '',
  '| file | result | tests passed | time |',
  '|---|---|---|---|',
  ...results.map((r) => `| ${r.file} | ${r.passed ? 'pass' : '**FAIL**'} | ${r.pass} of ${r.tests} | ${Math.round(r.seconds)} s |`),
  '',
  ...SECTIONS.flatMap(([key, title]) => section(title, figures.filter((f) => f.section === key))),
];
writeFileSync(REPORT, lines.join('\n'));
console.log(`\nwrote ${path.relative(ROOT, REPORT)}: ${results.length - failed.length} of ${results.length} files passed, ${lostTotal} calls lost`);
process.exitCode = failed.length > 0 || lostTotal > 0 ? 1 : 0;
