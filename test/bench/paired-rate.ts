// The fixed rate, read pair by pair: the balanced benchmark's everyday load
// (2,000 calls/s spread over 8 connections, one call at a time on each) on
// rpcscope's balanced relay, nginx, HAProxy and nghttpx, all up at once in
// front of the same three nghttpd endpoints, taking turns in short windows.
// balanced.ts measures each proxy's loads one proxy after another, a minute or
// more apart, and on a shared machine the cost of a call drifts over minutes
// more than the margins it compares (a round's fixed-rate ratio ran from 0.96×
// to 1.41× in one run). Here each round gives every proxy one window of a few
// seconds, the order turning round by round so that no proxy always follows the
// same one, and each proxy's figure is set against nginx's window of the same
// round: the ratio is read round by round and its median, lowest and highest
// printed, with how many rounds were at or under nginx.
//
// Each proxy is pinned to core 0 and h2load to core 1, the endpoints unpinned,
// as in balanced.ts; each proxy first runs the load unmeasured for
// --warm-seconds (the JIT, the connections to every endpoint). CPU per call is
// the proxy process's utime + stime over the window's calls.
//
// --shape c1 reads the c=1 target the same way: each window is one call at a
// time, its figure h2load's p50, and each round also times the direct path
// (h2load straight to the first endpoint), so that what a proxy adds is its p50
// less the direct p50 of the same round, set against nginx's of that round. A
// c=1 p50 moves with the machine from one second to the next (nginx's own added
// p50 ran 52–151 µs over the five rounds of one balanced.ts run), more than the
// proxies differ.
//
//   node --import tsx test/bench/paired-rate.ts [--shape rate|c1] [--rounds 10] [--calls 6000]
//       [--rate 2000] [--warm-seconds 10] [--node 20|24|both] [--only balanced,haproxy,nghttpx]
//
// --calls: each window's calls (6,000 at 2,000/s: 3 s; 3,000 at c=1). --only: the proxies
// beside nginx (always run: it is what every ratio is read against): balanced,
// haproxy and nghttpx unless given; pipe, the Node byte pipe (Node's floor: it
// copies bytes to the first endpoint and balances nothing), when named. --node as
// in balanced.ts. Prints a Markdown table and writes JSON and Markdown under
// test/bench/results/. Figures to compare, not assertions.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { checkpoint, cpuSeconds, interruptAtCheckpoints, Interrupted, interrupted, loadAverage, machine } from './bench-stats.ts';
import { addedOverDirect, pairedTable, rowName, summarizePaired, type PairedWindow } from './bench-report.ts';
import { h2load } from './h2load.ts';
import { benchNodes } from './node24.ts';
import { direct, haproxy, nghttpx, nginx, nodePipe, rpcscopeOutbound, type BenchContext, type Peer, type Route, type Target } from './peers.ts';
import { startNghttpd, type Upstream } from './upstreams.ts';
import { ONE_AT_A_TIME, workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const SHAPE = value('--shape') ?? 'rate';
if (SHAPE !== 'rate' && SHAPE !== 'c1') throw new Error(`--shape must be rate or c1, got ${SHAPE}`);
const C1 = SHAPE === 'c1';
const ROUNDS = Number(value('--rounds') ?? 10);
const CALLS = Number(value('--calls') ?? (C1 ? 3000 : 6000));
const RATE = Number(value('--rate') ?? 2000);
const WARM_SECONDS = Number(value('--warm-seconds') ?? 10);
const ONLY = (value('--only') ?? '').split(',').filter(Boolean);
const NODES = value('--node') ?? '24';
const ENDPOINTS = 3;
/** The c=1 calls each proxy runs unmeasured after the spread warm-up (as balanced.ts warms its c=1 load). */
const SERIAL_WARM_CALLS = 500;

for (const [name, v] of [['--rounds', ROUNDS], ['--calls', CALLS], ['--rate', RATE], ['--warm-seconds', WARM_SECONDS]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${value(name)}`);
}

const { nodes, node24Error } = benchNodes(NODES);
const notes: string[] = [];
if (node24Error !== undefined) {
  if (nodes.length === 0) nodes.push(...benchNodes('20').nodes);
  notes.push(`- Node 24: ${node24Error}; the rpcscope rows ran on ${nodes.map((n) => `Node ${n.version}`).join(' and ')}`);
}
const allPeers: Peer[] = [...nodes.flatMap((n) => [rpcscopeOutbound('relay', n.version, n.bin), nodePipe(n.version, n.bin)]), nginx, haproxy, nghttpx];
const BY_DEFAULT = new Set(['balanced', 'nginx', 'haproxy', 'nghttpx']);
const unknown = ONLY.filter((o) => !allPeers.some((p) => p.key === o));
if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (peers: ${allPeers.filter((p) => p.key !== 'nginx').map((p) => p.key).join(', ')})`);
// At c=1 the direct path takes its turn too: each round's added latency is read over it.
const peers = [...(C1 ? [direct] : []), ...allPeers.filter((p) => p.key === 'nginx' || (ONLY.length ? ONLY.includes(p.key) : BY_DEFAULT.has(p.key)))];

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-paired-'));
const cert = makeSelfSignedCert();
const ctx: BenchContext = { work, certFile: cert.certFile, keyFile: cert.keyFile, proxyCore: '0' };
const files = writeFiles(work);
const w = workloads(work, files, CALLS, RATE).find((x) => x.id === 'grpc-256')!;

const upstreams: Upstream[] = [];
for (let i = 0; i < ENDPOINTS; i++) upstreams.push(await startNghttpd(files.docroot));
const route: Route = { frontend: 'h2c', upstream: upstreams[0]!.url, upstreamProto: 'h2', direct: upstreams[0]!.url, endpoints: upstreams.map((u) => u.url) };

const date = new Date();
const t0 = Date.now();
const loadAtStart = loadAverage();
const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
const file = join(resultsDir, `paired-${SHAPE}-${date.toISOString().replace(/[:.]/g, '-')}.json`);
const command = `node --import tsx test/bench/paired-rate.ts ${args.join(' ')}`.trimEnd();
const windows: PairedWindow[] = [];
const running: { peer: Peer; target: Target }[] = [];

interruptAtCheckpoints();
try {
  for (const peer of peers) {
    const target = await peer.start(route, ctx);
    if (typeof target === 'string') notes.push(`- ${peer.name} skipped: ${target}`);
    else running.push({ peer, target });
  }
  if (!running.some((r) => r.peer.key === 'nginx')) throw new Error('nginx did not start: every ratio is read against it');
  for (const { peer, target } of running) {
    await checkpoint();
    process.stderr.write(`warm-up: ${rowName(peer.name, peer.node ?? '')}\n`);
    // The direct path has no proxy to warm at the fixed rate; at c=1 it is warmed as the proxies are.
    if (peer !== direct) h2load(target.url + w.path, w.spread, w.request, RATE * WARM_SECONDS, '1');
    if (C1) h2load(target.url + w.path, ONE_AT_A_TIME, w.request, SERIAL_WARM_CALLS, '1');
  }
  for (let round = 1; round <= ROUNDS; round++) {
    process.stderr.write(`round ${round}\n`);
    // The order turns each round: each proxy comes first, and after each other one, in turn.
    const shift = (round - 1) % running.length;
    for (const { peer, target } of [...running.slice(shift), ...running.slice(0, shift)]) {
      await checkpoint();
      if (C1) {
        const load = h2load(target.url + w.path, ONE_AT_A_TIME, w.request, CALLS, '1');
        windows.push({ target: peer.name, node: peer.node ?? '', round, value: load.p50Us, failed: load.failed });
        continue;
      }
      const c0 = cpuSeconds(target.pid!);
      const load = h2load(target.url + w.path, w.spread, w.request, CALLS, '1');
      const calls = load.ok + load.failed || CALLS;
      windows.push({ target: peer.name, node: peer.node ?? '', round, value: ((cpuSeconds(target.pid!) - c0) / calls) * 1e6, failed: load.failed });
    }
  }
} catch (err) {
  if (!(err instanceof Interrupted)) throw err;
  notes.push(`- interrupted by ${interrupted()}: the table holds the rounds measured before`);
} finally {
  for (const { target } of running) await target.stop();
  for (const u of upstreams) u.stop();
}

const m = machine();
const order = running.map((r) => rowName(r.peer.name, r.peer.node ?? ''));
const directP50 = windows.filter((x) => x.target === direct.name).map((x) => x.value);
const rows = summarizePaired(C1 ? addedOverDirect(windows, direct.name) : windows).sort((a, b) => order.indexOf(rowName(a.target, a.node)) - order.indexOf(rowName(b.target, b.node)));
const what = C1
  ? `one call at a time (c=1); each proxy warmed with ${WARM_SECONDS} s of ${RATE} calls/s over 8 connections and ${SERIAL_WARM_CALLS} calls at c=1, ` +
    `then ${ROUNDS} rounds of one ${CALLS}-call window each, the direct path (h2load straight to the first endpoint) among them, the order turning each round. ` +
    `Added p50: the window's p50 less the direct path's p50 of the same round (the direct p50 ran ${directP50.length ? `${Math.min(...directP50)}–${Math.max(...directP50)} µs` : 'unmeasured'}); ` +
    `×nginx: each round's added p50 over nginx's in the same round.`
  : `${RATE} calls/s over 8 connections one call at a time; each proxy warmed with ${WARM_SECONDS} s of the load, ` +
    `then ${ROUNDS} rounds of one ${CALLS}-call window each, the order turning each round. CPU per call: the proxy process's utime + stime (10 ms ticks) over the window; ` +
    `×nginx: each round's figure over nginx's in the same round.`;
const markdown =
  [
    `### Paired ${C1 ? 'c=1' : 'fixed-rate'} benchmark, ${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${m.cpu}, ${m.cores} cores, Linux ${m.kernel}; the proxies all up at once on core 0, h2load on core 1, three nghttpd endpoints unpinned; ` +
      `gRPC unary 256 B, round robin over the endpoints, ${what} Load average ${loadAtStart} at the start, ${loadAverage()} at the end.`,
    C1
      ? pairedTable('gRPC unary, 256 B, three endpoints, c=1: the p50 each proxy adds, read against nginx round by round', ROUNDS, rows, 'added p50 µs')
      : pairedTable(`gRPC unary, 256 B, three endpoints, ${RATE}/s over 8 connections: CPU a call, read against nginx round by round`, ROUNDS, rows),
    [...notes, `- ${Math.round((Date.now() - t0) / 1000)} s; command: ${command}`].join('\n'),
  ].join('\n\n') + '\n';
mkdirSync(resultsDir, { recursive: true });
writeFileSync(file, JSON.stringify({ date: date.toISOString(), machine: m, command, settings: { shape: SHAPE, rounds: ROUNDS, calls: CALLS, rate: RATE, warmSeconds: WARM_SECONDS }, loadAverage: { start: loadAtStart, end: loadAverage() }, summary: rows, windows }, null, 2) + '\n');
writeFileSync(file.replace(/\.json$/, '.md'), markdown);
process.stdout.write(`\n${markdown}\nwritten: ${file} (and .md)\n`);
if (interrupted()) process.exitCode = 130;
