// The whole test suite, as `npm test` runs it: static checks, the panel plugin's
// own suite and build, then every node:test file of the workspace (unit,
// integration, acceptance, real Prometheus, the panel in Chromium). Ends with one
// summary line that counts every test of every runner: passed, failed (a test
// cancelled, e.g. by a timeout, counts as failed) and skipped; the line before it
// counts skipped and todo tests, which neither pass nor fail, so that none hides.
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { failureLine, tapFailures, type TapFailure } from './tap-failures.ts';
import { runWatched } from './watched-run.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (pkgDir: string, name: string): string => join(root, pkgDir, 'node_modules', '.bin', name);

interface StepResult {
  name: string;
  ok: boolean;
  passed: number;
  failed: number;
  /** Tests not run (`skip`), counted apart so that a suite skipping itself shows. */
  skipped: number;
  /** Tests marked `todo`: run, but neither passed nor failed. */
  todo: number;
  seconds: number;
}

interface Counts {
  ok: boolean;
  passed?: number;
  failed?: number;
  skipped?: number;
  todo?: number;
}

const run = (cmd: string, args: string[], cwd = root): Promise<{ code: number; output: string }> => runWatched(cmd, args, { cwd, stdout: process.stdout, stderr: process.stderr });

function findTests(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'fixtures') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findTests(path, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

async function step(name: string, fn: () => Promise<Counts>): Promise<StepResult> {
  process.stdout.write(`\n== ${name}\n`);
  const t0 = Date.now();
  const r = await fn();
  const res = { name, ok: r.ok, passed: r.passed ?? 0, failed: r.failed ?? (r.ok ? 0 : 1), skipped: r.skipped ?? 0, todo: r.todo ?? 0, seconds: (Date.now() - t0) / 1000 };
  process.stdout.write(`== ${name}: ${res.ok ? 'ok' : 'FAILED'} (${res.seconds.toFixed(1)} s)\n`);
  return res;
}

const check = (cmd: string, args: string[], cwd?: string) => async () => ({ ok: (await run(cmd, args, cwd)).code === 0 });

const results: StepResult[] = [];
results.push(await step('lint', check(bin('.', 'eslint'), ['--max-warnings', '0', '.'])));
results.push(await step('typecheck', check(bin('.', 'tsc'), ['-p', 'tsconfig.json', '--noEmit'])));
const plugin = join(root, 'grafana-plugin');
results.push(await step('panel plugin: typecheck', check(bin('grafana-plugin', 'tsc'), ['--noEmit'], plugin)));
results.push(await step('panel plugin: lint', check(bin('grafana-plugin', 'eslint'), ['--max-warnings', '0', '.'], plugin)));
results.push(
  await step('panel plugin: jest', async () => {
    const { code, output } = await run(bin('grafana-plugin', 'jest'), ['--ci', '--maxWorkers', '2'], plugin);
    const line = /^Tests:\s+(.*)$/m.exec(output)?.[1] ?? '';
    const count = (what: string): number => Number(new RegExp(`(\\d+) ${what}`).exec(line)?.[1] ?? 0);
    return { ok: code === 0, passed: count('passed'), failed: count('failed') + (code !== 0 && count('failed') === 0 ? 1 : 0), skipped: count('skipped'), todo: count('todo') };
  }),
);
// The browser tests load the built plugin.
results.push(await step('panel plugin: build', check(process.execPath, ['.config/build.mjs'], plugin)));
/** Every failed or cancelled node:test test of the run, printed again before the summary. */
const failures: TapFailure[] = [];
/** How many failures the digest before the summary prints (CI keeps the last lines of a run). */
const DIGEST = 12;

/**
 * How long one test may run unless it says otherwise (`{ timeout }`): the
 * longest today runs about 2 minutes. A test past it fails by name, so a call
 * that never ends fails the suite in minutes instead of holding CI until its
 * own limit with nothing to say which test waited.
 */
const TEST_TIMEOUT_MS = 10 * 60_000;
/**
 * How long a node:test run may print nothing: longer than any test may run.
 * Past it, a test file's process is alive with its tests over (a server or
 * timer left open), and the run is ended naming it (watched-run.ts).
 */
const SILENT_MS = TEST_TIMEOUT_MS + 2 * 60_000;

/**
 * Runs node:test files (with the environment added) and counts their tests from
 * the TAP report's closing `# pass`, `# fail`, `# cancelled`, `# skipped` and
 * `# todo` lines. A cancelled test (a timeout, a parent that failed) is not in
 * `# fail`; it counts as failed here.
 */
async function nodeTests(files: string[], env: NodeJS.ProcessEnv = {}): Promise<Required<Counts>> {
  const tap = join(mkdtempSync(join(tmpdir(), 'rpcscope-tap-')), 'results.tap');
  const args = ['--import', 'tsx', '--test', `--test-timeout=${TEST_TIMEOUT_MS}`, '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files];
  const { code, silentFiles } = await runWatched(process.execPath, args, { cwd: root, env, silentMs: SILENT_MS, stdout: process.stdout, stderr: process.stderr });
  if (silentFiles) {
    const error = `node:test printed nothing for ${SILENT_MS / 60_000} minutes and was ended: a test file's process outlived its tests (a server, socket or timer left open)`;
    process.stdout.write(`\n${error}; still running: ${silentFiles.join(', ') || 'no test file'}\n`);
    failures.push({ name: `still running: ${silentFiles.join(', ') || 'no test file'}`, failureType: 'processOutlivedTests', error, location: '' });
  }
  let text = '';
  try {
    text = readFileSync(tap, 'utf8');
  } catch {
    // A run ended before its report was written.
  }
  failures.push(...tapFailures(text));
  const num = (k: string): number => Number(new RegExp(`^# ${k} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  const failed = num('fail') + num('cancelled');
  return { ok: code === 0, passed: num('pass'), failed: failed + (code !== 0 && failed === 0 ? 1 : 0), skipped: num('skipped'), todo: num('todo') };
}

const allTests = ['sidecar/test', 'demo/test', 'test'].flatMap((d) => findTests(join(root, d))).sort();
results.push(await step('node:test suites', () => nodeTests(allTests)));
// HTTP/2 and HTTP/1.1 take their relays by default (inbound: 1:1; outbound
// HTTP/2: the balanced relay); the suites that exercise the data plane run once
// more on the terminating path (--data-plane, --http1-data-plane and
// --outbound-data-plane terminate), which users can choose and which translated
// calls and the mirror always take: the outbound ones too (pickers, DNS
// discovery, connection age, endpoint series, an endpoint that vanishes).
const TERMINATE_SUITES = [
  /^sidecar\/test\/upstream\/balancer\/outbound\.test\.ts$/,
  /^test\/fleet\/(outbound-balance|dns-discovery|max-connection-age|sticky-skew)\.test\.ts$/,
  /^test\/cluster\/(blackhole-upstream|outbound-dns)\.test\.ts$/,
  /^sidecar\/test\/proxy\//,
  /^sidecar\/test\/listen\//,
  /^sidecar\/test\/upstream\/h1-/,
  /^test\/acceptance\//,
  /^test\/reliability\/(faults-|h2-abuse|grpc-bad-input|slow-clients|h1-|backpressure|max-connections)/,
];
results.push(
  await step('node:test suites, terminating data plane', () =>
    nodeTests(
      allTests.filter((f) => TERMINATE_SUITES.some((re) => re.test(f))),
      { RPCSCOPE_DATA_PLANE: 'terminate', RPCSCOPE_HTTP1_DATA_PLANE: 'terminate', RPCSCOPE_OUTBOUND_DATA_PLANE: 'terminate' },
    ),
  ),
);
process.stdout.write('\n');
if (failures.length > 0) {
  // What failed and why: the tests and hooks that failed themselves, then the tests a suite's failure
  // cancelled. A suite that failed only because a test in it did says nothing more and is left out.
  const own = failures.filter((f) => f.failureType !== 'subtestsFailed');
  const shown = [...own.filter((f) => f.failureType !== 'cancelledByParent'), ...own.filter((f) => f.failureType === 'cancelledByParent')].slice(0, DIGEST);
  process.stdout.write(`failures (${own.length}${own.length > DIGEST ? `, the first ${DIGEST}` : ''}; the spec report above has each in full):\n`);
  for (const f of shown) process.stdout.write(`${failureLine({ ...f, location: f.location && relative(root, f.location) }, 400)}\n`);
}
for (const r of results) {
  process.stdout.write(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name.padEnd(40)} ${String(r.passed).padStart(5)} passed ${String(r.failed).padStart(3)} failed ${String(r.skipped).padStart(3)} skipped ${String(r.todo).padStart(3)} todo  ${r.seconds.toFixed(1)} s\n`);
}
const total = (k: 'passed' | 'failed' | 'skipped' | 'todo'): number => results.reduce((n, r) => n + r[k], 0);
process.stdout.write(`not passed and not failed: ${total('skipped')} skipped, ${total('todo')} todo\n`);
// The last line is what CI reads: `N passed, N failed`, and only `, N skipped` may follow.
process.stdout.write(`tests: ${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped\n`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
