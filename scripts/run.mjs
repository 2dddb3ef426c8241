#!/usr/bin/env node
// The README's entry points: `npm run demo` and `npm test`.
// Each one first installs the workspace from the frozen lockfile with the pinned
// pnpm (fetched by npx when it is not installed), so that a machine with only
// Node and npm needs no other step, then builds the sidecar from the current
// sources (bin/rpcscope runs the build). `test` first checks for the programs
// the suites drive (scripts/preflight.mjs). Started by a Node older than
// rpcscope's floor (Node 24), it first runs itself again on the pinned Node 24,
// fetched from the npm registry once (scripts/node-runtime.mjs).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLOOR, pinnedNode, supportedNode } from './node-runtime.mjs';
import { preflight, programEnv, testPath } from './preflight.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager; // "pnpm@12.4.2"

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', ...opts });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function pnpmArgs(args) {
  const v = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  if (!v.error && v.stdout.trim() === PNPM.split('@')[1]) return ['pnpm', args];
  return ['npx', ['-y', PNPM, ...args]];
}

function install() {
  const [cmd, args] = pnpmArgs(['install', '--frozen-lockfile', '--reporter=append-only']);
  const status = run(cmd, args);
  if (status !== 0) process.exit(status);
}

const [what = 'test', ...rest] = process.argv.slice(2);
const scripts = { demo: 'demo/src/main.ts', test: 'scripts/test.ts' };
if (!(what in scripts)) {
  console.error(`usage: node scripts/run.mjs demo|test (got ${JSON.stringify(what)})`);
  process.exit(2);
}
if (!supportedNode()) onPinnedNode();
else main();

/**
 * This Node is older than the floor: the same command on the pinned Node 24, its
 * directory first on PATH so that everything the run starts by name (`node`,
 * the sidecar's launcher, npx) is that Node too. Its exit status is this one's.
 */
function onPinnedNode() {
  const pinned = pinnedNode();
  if ('error' in pinned) {
    console.error(`rpcscope: ${what} needs Node ${NODE_FLOOR} or later; this is Node ${process.version}, and Node ${NODE_FLOOR} could not be fetched: ${pinned.error}`);
    process.exit(1);
  }
  console.error(`rpcscope: Node ${process.version} is older than rpcscope's floor (Node ${NODE_FLOOR}): ${what} runs on ${pinned.bin}`);
  const env = { ...process.env, PATH: [dirname(pinned.bin), process.env.PATH].filter(Boolean).join(delimiter) };
  const child = spawn(pinned.bin, [fileURLToPath(import.meta.url), what, ...rest], { cwd: root, stdio: 'inherit', env });
  // Ctrl-C reaches the child from the terminal itself (the demo then prints its summary): this process waits for it.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => child.kill('SIGTERM'));
  child.on('error', (err) => {
    console.error(`rpcscope: ${pinned.bin} could not start: ${err.message}`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 1)));
}

/** The command on this Node. */
function main() {
  // Ctrl-C reaches each step from the terminal: this process ends when the step does (the demo after its summary).
  process.on('SIGINT', () => {});
  let env = process.env;
  if (what === 'test') {
    env = { ...env, PATH: testPath(env.PATH) };
    const checked = preflight(env);
    if (!checked.ok) {
      console.error(checked.message);
      process.exit(1);
    }
    // The suites use the very programs the check found.
    env = { ...env, ...programEnv(checked.programs) };
  }
  if (!process.env.RPCSCOPE_SKIP_INSTALL || !existsSync(join(root, 'node_modules'))) install();
  // The install builds it only when it installs something.
  const built = run(process.execPath, [join(root, 'sidecar', 'build.mjs')]);
  if (built !== 0) process.exit(built);
  process.exit(run(process.execPath, ['--import', 'tsx', scripts[what], ...rest], { env }));
}
