#!/usr/bin/env node
// `npm run outdated`: which pinned dependencies of the workspace lag the npm registry's
// latest, from `pnpm outdated -r`, one line each, majors last, with the reason where a
// lag is deliberate. Informational only: it always exits 0 (even offline), and neither
// `npm test` nor CI runs it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).packageManager; // "pnpm@12.4.2"

const [major, minor] = [0, 1].map((i) => (v) => Number(String(v).split('.')[i]));

// Lags on purpose, each with the test of a latest version it holds back; the README's
// "Versions" says more.
const HELD = [
  // A newer major's types would let code use what Node 24 lacks.
  [/^@types\/node$/, (v) => major(v) > 24, 'the types of the oldest Node the engines field allows (24)'],
  [/^react(-dom)?$|^@types\/react(-dom)?$/, () => true, 'the React that Grafana 13.2 ships, which the panel runs on'],
  [/^jsdom$|^@types\/jsdom$/, () => true, 'the jsdom of jest-environment-jsdom 30, which the bench uses too'],
];

function pnpm(args) {
  const v = spawnSync('pnpm', ['--version'], { encoding: 'utf8' });
  const [cmd, argv] = !v.error && v.stdout.trim() === PNPM.split('@')[1] ? ['pnpm', args] : ['npx', ['-y', PNPM, ...args]];
  return spawnSync(cmd, argv, { cwd: root, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
}

// pnpm outdated exits 1 when something is outdated: the JSON on stdout is what counts.
const r = pnpm(['outdated', '-r', '--format', 'json']);
let report;
try {
  report = JSON.parse(r.stdout || 'null');
} catch {
  report = null;
}
if (report === null || typeof report !== 'object') {
  console.log(`could not ask the registry (pnpm outdated: ${(r.stderr || r.error?.message || 'no output').trim().split('\n').at(-1)}); nothing checked`);
  process.exit(0);
}

const rows = Object.entries(report).map(([name, info]) => {
  const kind = major(info.latest) !== major(info.current) ? 'major' : minor(info.latest) !== minor(info.current) ? 'minor' : 'patch';
  const held = HELD.find(([re, holds]) => re.test(name) && holds(info.latest))?.[2] ?? '';
  const where = [...new Set((info.dependentPackages ?? []).map((p) => p.name))].join(', ');
  return { name, current: info.current, latest: info.latest, kind, where, held };
});
const order = { patch: 0, minor: 1, major: 2 };
rows.sort((a, b) => order[a.kind] - order[b.kind] || a.name.localeCompare(b.name));

if (rows.length === 0) {
  console.log('every dependency is at the registry\'s latest');
  process.exit(0);
}
const width = (k) => Math.max(...rows.map((row) => row[k].length), k.length);
const cols = ['name', 'current', 'latest', 'kind', 'where'];
const line = (row) => cols.map((k) => row[k].padEnd(width(k))).join('  ') + (row.held ? `  held: ${row.held}` : '');
console.log(line({ name: 'package', current: 'pinned', latest: 'latest', kind: 'kind', where: 'in', held: '' }));
for (const row of rows) console.log(line(row));
console.log(`${rows.length} behind the registry (${rows.filter((row) => row.held).length} on purpose); informational, nothing fails`);
process.exit(0);
