// Octets the HTTP/2 relay allocates per call, what its garbage collection has to
// take back: the built sidecar in front of nghttpd, V8's sampling heap profiler
// on (every allocation counted, those collected since too) over a fixed number of
// gRPC unary 256 B calls from h2load after a warm-up, each sampled site named by
// its TypeScript function through the bundle's source map. Like the system calls
// of relay-syscalls.ts, the figure does not depend on the machine's load.
//
// --balanced: the outbound sidecar's balanced relay instead, spreading the calls
// round robin over three nghttpd.
//
//   node --import tsx test/bench/relay-allocations.ts [--calls 10000] [--balanced]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RPCSCOPE_BIN } from '../support/sidecar-process.ts';
import { freePort, waitForPort } from './bench-stats.ts';
import { h2load } from './h2load.ts';
import { startNghttpd } from './upstreams.ts';
import { workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const CALLS = Number(value('--calls') ?? 10_000);
if (!Number.isInteger(CALLS) || CALLS < 1000) throw new Error(`--calls must be an integer of at least 1000, got ${value('--calls')}`);
const SHAPE = ['-c', '8', '-m', '1'];
const BALANCED = args.includes('--balanced');
const BUNDLE = join(RPCSCOPE_BIN, '..', '..', 'dist', 'rpcscope.cjs');

// Loaded into the sidecar (--require): the first SIGUSR2 starts sampling, the second writes the profile.
const SAMPLER = `
const inspector = require('node:inspector');
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.enable');
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    return session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  // Written aside, then renamed: the bench reads the file as soon as it is there.
  session.post('HeapProfiler.stopSampling', (err, r) => {
    const fs = require('node:fs');
    fs.writeFileSync(process.env.RPCSCOPE_HEAP_OUT + '.part', JSON.stringify(err ? { error: String(err) } : r.profile));
    fs.renameSync(process.env.RPCSCOPE_HEAP_OUT + '.part', process.env.RPCSCOPE_HEAP_OUT);
  });
});
`;

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: Node[];
}

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-alloc-'));
const files = writeFiles(work);
const w = workloads(work, files, CALLS, 1000).find((x) => x.id === 'grpc-256')!;
writeFileSync(join(work, 'sampler.cjs'), SAMPLER);
const out = join(work, 'heap.json');
const nghttpd = await startNghttpd(files.docroot);
const more = BALANCED ? [await startNghttpd(files.docroot), await startNghttpd(files.docroot)] : [];
const port = await freePort();
const sidecarArgs = ['--listen', `127.0.0.1:${port}`, '--admin', '127.0.0.1:0', '--upstream', nghttpd.url, '--upstream-protocol', 'http2', '--data-plane', 'relay', '--log-level', 'warn'];
if (BALANCED) {
  const endpoints = [nghttpd, ...more].map((u) => new URL(u.url).host).join(',');
  sidecarArgs.push('--mode', 'outbound', '--endpoints', endpoints, '--balance', 'round_robin', '--outbound-data-plane', 'relay');
}
const sc = spawn(process.execPath, ['--require', join(work, 'sampler.cjs'), BUNDLE, ...sidecarArgs], {
  env: { ...process.env, RPCSCOPE_HEAP_OUT: out },
  stdio: 'ignore',
});
const waitForFile = async (): Promise<string> => {
  for (let i = 0; i < 100; i++) {
    try {
      return readFileSync(out, 'utf8');
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error('the sidecar wrote no heap profile in 10 s');
};
let profile: { head: Node };
try {
  await waitForPort(port, 'rpcscope');
  const url = `http://127.0.0.1:${port}${w.path}`;
  h2load(url, SHAPE, w.request, 1000, undefined);
  sc.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, 300));
  const load = h2load(url, SHAPE, w.request, CALLS, undefined);
  if (load.ok !== CALLS) throw new Error(`${load.failed} of ${CALLS} calls failed`);
  sc.kill('SIGUSR2');
  profile = JSON.parse(await waitForFile()) as { head: Node };
} finally {
  sc.kill('SIGTERM');
  nghttpd.stop();
  for (const u of more) u.stop();
}

const map = new SourceMap(JSON.parse(readFileSync(`${BUNDLE}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
const bySite = new Map<string, number>();
let total = 0;
const walk = (n: Node): void => {
  const f = n.callFrame;
  let site = `${f.functionName || '(anonymous)'} (${f.url.split('/').pop() || 'native'})`;
  if (f.url.endsWith('rpcscope.cjs')) {
    const e = map.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string; originalLine?: number };
    if (e.originalSource) site = `${f.functionName || '(anonymous)'} (${e.originalSource.split('/src/').pop()}:${e.originalLine! + 1})`;
  }
  bySite.set(site, (bySite.get(site) ?? 0) + n.selfSize);
  total += n.selfSize;
  for (const c of n.children) walk(c);
};
walk(profile.head);
console.log(`h2load -n ${CALLS} ${SHAPE.join(' ')} gRPC unary 256 B through the ${BALANCED ? 'balanced relay to three nghttpd' : 'relay to nghttpd'} (${process.version}): ${Math.round(total / CALLS)} octets allocated per call\n`);
console.log('| where (function, sampled site) | octets per call |\n|---|---:|');
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log(`| ${site} | ${Math.round(bytes / CALLS)} |`);
