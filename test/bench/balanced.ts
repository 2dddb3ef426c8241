// The balanced benchmark: rpcscope as an outbound sidecar spreading gRPC calls
// over three endpoints, against the proxies a user would balance with instead,
// side by side in one run. The endpoints are three nghttpd (Debian
// nghttp2-server) answering the 256 B unary call of the load benchmark
// (workloads.ts, grpc-256), h2c throughout. Rows: direct (one endpoint, no
// proxy: the latency base), rpcscope's balanced relay (--outbound-data-plane
// relay, an endpoint picked per call at frame level), rpcscope terminating
// each call (--outbound-data-plane terminate, node:http2), both with
// --balance round_robin; nginx (grpc_pass to an upstream block of the three,
// keepalive), HAProxy (three server lines, proto h2, balance roundrobin) and
// nghttpx (three -b backends, proto=h2); and a 1:1 byte pipe on net.Socket
// to the first endpoint (--only pipe), Node's floor. Each proxy is pinned to
// core 0 and h2load to core 1; the endpoints are not pinned. A proxy's CPU
// comes from /proc/<pid>/stat (utime + stime). Three loads: saturation, 2,000 calls/s
// spread over 8 connections with one call at a time on each, and one call at a
// time (c=1), whose median latency less the direct one is the latency the
// proxy adds. Each load follows an unmeasured warm-up of the same shape.
//
// Every peer of a round comes up at the round's start. Each runs its saturation
// and spread loads alone, one peer after another; then the peers take turns at
// c=1 in cycles, one window of calls each a cycle (the direct path among them),
// the order turning from cycle to cycle. A c=1 p50 moves with the machine from
// one second to the next by more than the proxies differ (this VM has seconds
// when every path, the direct one too, runs 20–40 µs a call slower), so a proxy
// measured in one window, minutes from nginx's, reads above or below it by
// where those seconds fell. Read in cycles a few seconds long, a window's added
// latency is its p50 less the direct p50 of its own cycle, and each proxy's
// figure is the median over its windows; the table also counts the cycles in
// which the proxy added no more than nginx did.
//
// The skew: how the proxy spread each load over the endpoints, counted outside
// the proxies, by what each nghttpd process wrote during the load: wchar of
// /proc/<pid>/io, read before and after. Every answer of the workload is the
// same bytes (HEADERS, 261 B of DATA, trailers), so an endpoint's bytes are
// proportional to the calls it answered, give or take its connections' own
// frames (SETTINGS, WINDOW_UPDATE, PING, the first HEADERS of a connection
// before HPACK's table fills; a proxy that opens more upstream connections
// makes its endpoints write more per call). Skew is max/mean of the three
// endpoints' bytes (1: even, 3: one endpoint took everything). The calls per
// endpoint shown beside it are an estimate: the load's calls shared out in
// proportion to those bytes; at c=1, those of the window whose skew is the median.
//
// Prints Markdown tables and writes JSON and Markdown under test/bench/results/.
// Figures to compare, not assertions.
//
//   node --import tsx test/bench/balanced.ts [--rounds 3] [--calls 20000] [--rate 2000]
//       [--quick] [--only balanced,terminate,pipe,nginx,haproxy,nghttpx] [--no-pin] [--warm-seconds 10]
//       [--node 20|24|both] [--c1-cycles 4]
//
// --quick: 5,000 calls at saturation, 2 s of the spread load, one round, 1 s of warm-up, one c=1 cycle.
// --c1-cycles: the c=1 cycles a round (4 unless --quick).
// --warm-seconds: how long the spread load runs unmeasured before it is measured.
// --only: the peers to run (direct always runs: it is the latency base and the bytes per call).
// --node: the Node the rpcscope rows and the byte pipe run on: 24 (the default),
// the Node rpcscope supports and the images deploy it on (node:24), fetched from
// the npm registry once (node24.ts); 20, the Node running this script (a
// machine's Node 20, to compare); both gives each its rows. When npm cannot
// fetch Node 24, the notes say so: with --node 24 its rows
// run on this Node instead.
// Ctrl-C stops the run with what it measured.
//
// The figures to quote come from a quiet machine (load average below the core
// count, printed with the tables) and this command, a few minutes:
//   node --import tsx test/bench/balanced.ts --rounds 3
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeSelfSignedCert } from '../../sidecar/test/support/certs.ts';
import { bytesWritten, checkpoint, cpuSeconds, interruptAtCheckpoints, Interrupted, interrupted, loadAverage, machine } from './bench-stats.ts';
import { balancedCpuTable, balancedSkewTable, rowName, summarizeBalanced, type BalancedPhase, type BalancedSample, type SerialWindow } from './bench-report.ts';
import { h2load } from './h2load.ts';
import { benchNodes } from './node24.ts';
import { direct, haproxy, nghttpx, nginx, nodePipe, rpcscopeOutbound, type BenchContext, type Peer, type Route, type Target } from './peers.ts';
import { startNghttpd, type Upstream } from './upstreams.ts';
import { ONE_AT_A_TIME, workloads, writeFiles } from './workloads.ts';

const args = process.argv.slice(2);
const flag = (name: string): boolean => args.includes(name);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const QUICK = flag('--quick');
const ROUNDS = Number(value('--rounds') ?? 1);
const CALLS = Number(value('--calls') ?? (QUICK ? 5000 : 20_000));
const RATE = Number(value('--rate') ?? 2000);
const ONLY = (value('--only') ?? '').split(',').filter(Boolean);
const PROXY_CORE = flag('--no-pin') ? undefined : '0';
const LOAD_CORE = flag('--no-pin') ? undefined : '1';
/** How long the spread load lasts at most, s. */
const SPREAD_SECONDS = QUICK ? 2 : 5;
/**
 * The warm-up before each load, unmeasured: the spread shape for this long, s,
 * and this many calls one at a time. A JIT-compiled proxy (the rpcscope rows,
 * the byte pipe) compiles the paths a quiet load takes (a lone read written at
 * once, connections opened and closed at that load) during the first seconds of
 * that load, not during a saturation warm-up, and V8's compiler threads count in
 * the process's CPU. A sidecar that has run for a while has long done so: the
 * spread load is measured once that is over. Measured on the balanced relay at
 * the fixed rate, in 5 s windows from its start (main thread + the other
 * threads, µs a call): 52 + 23, 38 + 7, 37 + 0, then 37–47 + 0 (noise). The C
 * proxies compile nothing; every row gets the same warm-up.
 */
const WARM_SECONDS = Number(value('--warm-seconds') ?? (QUICK ? 1 : 10));
const SERIAL_WARM_CALLS = 500;
/** c=1 windows each peer takes a round, one a cycle (--c1-cycles). */
const C1_CYCLES = Number(value('--c1-cycles') ?? (QUICK ? 1 : 4));
const ENDPOINTS = 3;
const NODES = value('--node') ?? '24';

for (const [name, v] of [['--rounds', ROUNDS], ['--calls', CALLS], ['--rate', RATE], ['--warm-seconds', WARM_SECONDS], ['--c1-cycles', C1_CYCLES]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${value(name)}`);
}

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-balanced-'));
// The routes are h2c; HAProxy writes its PEM from the pair whatever the route.
const cert = makeSelfSignedCert();
const ctx: BenchContext = { work, certFile: cert.certFile, keyFile: cert.keyFile, proxyCore: PROXY_CORE };
const files = writeFiles(work);
const w = workloads(work, files, CALLS, RATE).find((x) => x.id === 'grpc-256')!;
const skipped = new Map<string, string>();
const { nodes, node24Error } = benchNodes(NODES);
if (node24Error !== undefined && nodes.length > 0) skipped.set('Node 24 rows', node24Error);
else if (node24Error !== undefined) {
  // --node 24 without Node 24: the rpcscope rows on this Node rather than none.
  nodes.push(...benchNodes('20').nodes);
  skipped.set('Node 24', `${node24Error}; the rpcscope rows ran on this Node (${nodes[0]!.version}) instead`);
}
const node = nodes.map((n) => n.version).join(' and ');

// The byte pipe balances nothing (its one connection goes to the first endpoint: skew 3): it is the row of
// Node's floor, what moving the bytes alone costs a proxy on Node at each load.
const allPeers: Peer[] = [
  direct,
  ...nodes.flatMap((n) => [rpcscopeOutbound('relay', n.version, n.bin), rpcscopeOutbound('terminate', n.version, n.bin), nodePipe(n.version, n.bin)]),
  nginx,
  haproxy,
  nghttpx,
];
const unknown = ONLY.filter((o) => !allPeers.some((p) => p.key === o));
if (unknown.length) throw new Error(`--only: unknown ${unknown.join(', ')} (peers: ${allPeers.map((p) => p.key).join(', ')})`);
const peers = ONLY.length ? allPeers.filter((p) => p.key === 'direct' || ONLY.includes(p.key)) : allPeers;

const upstreams: Upstream[] = [];
for (let i = 0; i < ENDPOINTS; i++) upstreams.push(await startNghttpd(files.docroot));
const route: Route = { frontend: 'h2c', upstream: upstreams[0]!.url, upstreamProto: 'h2', direct: upstreams[0]!.url, endpoints: upstreams.map((u) => u.url) };
const written = (): number[] => upstreams.map((u) => bytesWritten(u.pid!));

function warm(t: Target, shape: readonly string[], calls: number): void {
  h2load(t.url + w.path, shape, w.request, calls, LOAD_CORE);
}

function measure(t: Target, shape: readonly string[], calls: number): BalancedPhase {
  const b0 = written();
  const c0 = t.pid ? cpuSeconds(t.pid) : 0;
  const load = h2load(t.url + w.path, shape, w.request, calls, LOAD_CORE);
  const cpu = t.pid ? cpuSeconds(t.pid) - c0 : NaN;
  const b1 = written();
  return { ...load, cpuUsPerCall: (cpu / ((load.ok + load.failed) || calls)) * 1e6, endpointBytes: b1.map((b, i) => b - b0[i]!) };
}

const errors: string[] = [];
async function started(p: Peer): Promise<Target | undefined> {
  try {
    const t = await p.start(route, ctx);
    if (typeof t === 'string') skipped.set(p.name, t);
    return typeof t === 'string' ? undefined : t;
  } catch (err) {
    errors.push(`${rowName(p.name, p.node ?? '')}: ${(err as Error).message.split('\n')[0]}`);
    return undefined;
  }
}

const samples: BalancedSample[] = [];
const t0 = Date.now();
const loadAtStart = loadAverage();
const date = new Date();
const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
const file = join(resultsDir, `balanced-${date.toISOString().replace(/[:.]/g, '-')}.json`);
const command = `node --import tsx test/bench/balanced.ts ${args.join(' ')}`.trimEnd();

interruptAtCheckpoints();
try {
  for (let round = 1; round <= ROUNDS; round++) {
    // Every peer comes up fresh for the round; each runs its saturation and spread loads alone, one peer after another.
    const up: { peer: Peer; target: Target; saturation?: BalancedPhase; spread?: BalancedPhase; serial: SerialWindow[] }[] = [];
    try {
      for (const p of peers) {
        await checkpoint();
        const t = await started(p);
        if (t) up.push({ peer: p, target: t, serial: [] });
      }
      for (const u of up) {
        const { peer: p, target: t } = u;
        process.stderr.write(`round ${round}: ${rowName(p.name, p.node ?? '')}\n`);
        try {
          // Each load is measured after a warm-up of its own shape (the JIT, the connections to every endpoint).
          warm(t, w.saturation, Math.ceil(CALLS / 4));
          await checkpoint();
          u.saturation = measure(t, w.saturation, CALLS);
          await checkpoint();
          warm(t, w.spread, RATE * WARM_SECONDS);
          await checkpoint();
          u.spread = measure(t, w.spread, Math.min(CALLS, RATE * SPREAD_SECONDS));
          await checkpoint();
          warm(t, ONE_AT_A_TIME, SERIAL_WARM_CALLS);
        } catch (err) {
          if (err instanceof Interrupted) throw err;
          errors.push(`${rowName(p.name, p.node ?? '')}: ${(err as Error).message.split('\n')[0]}`);
        }
      }
      // c=1: the peers take turns, one window each a cycle, the order turning cycle by cycle.
      const ready = up.filter((u) => u.spread !== undefined);
      process.stderr.write(`round ${round}: c=1, ${C1_CYCLES} cycles\n`);
      for (let c = 0; c < C1_CYCLES; c++) {
        const cycle = (round - 1) * C1_CYCLES + c + 1;
        const shift = (cycle - 1) % Math.max(1, ready.length);
        for (const u of [...ready.slice(shift), ...ready.slice(0, shift)]) {
          await checkpoint();
          try {
            u.serial.push({ ...measure(u.target, ONE_AT_A_TIME, w.serialCalls), cycle });
          } catch (err) {
            if (err instanceof Interrupted) throw err;
            errors.push(`${rowName(u.peer.name, u.peer.node ?? '')}, c=1 cycle ${cycle}: ${(err as Error).message.split('\n')[0]}`);
          }
        }
      }
    } finally {
      for (const u of up) {
        if (u.saturation && u.spread && u.serial.length > 0) samples.push({ target: u.peer.name, node: u.peer.node ?? '', round, saturation: u.saturation, spread: u.spread, serial: u.serial });
        await u.target.stop();
      }
    }
    report(true);
  }
} catch (err) {
  if (!(err instanceof Interrupted)) throw err;
  errors.push(`interrupted by ${interrupted()}: the tables hold what was measured before`);
} finally {
  for (const u of upstreams) u.stop();
}
report();
if (interrupted()) process.exitCode = 130;

/** Tables and files from what was measured so far; `partial` writes them without printing. */
function report(partial = false): void {
  const summary = summarizeBalanced(samples);
  const m = machine();
  const header = [
    `### Balanced benchmark, ${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    '',
    `${m.cpu}, ${m.cores} cores, Linux ${m.kernel}; Node ${node} for the rpcscope rows; ` +
      `${PROXY_CORE === undefined ? 'nothing pinned' : `proxies on core ${PROXY_CORE}, h2load on core ${LOAD_CORE}, the three nghttpd endpoints unpinned`}; ` +
      `${ROUNDS === 1 ? 'one round' : `medians of ${ROUNDS} rounds`}, ${CALLS} calls at saturation (c16 m10), ${RATE} calls/s over 8 connections one call at a time, c=1 in ${C1_CYCLES} cycle${C1_CYCLES === 1 ? '' : 's'} a round of one ${w.serialCalls}-call window for each peer, the direct path among them, the order turning cycle by cycle (the added p50: each window's p50 less the direct p50 of its cycle, median over the windows; cycles at or under nginx: the proxy's added p50 against nginx's in the same cycle), each load after an unmeasured warm-up of its own shape (${Math.ceil(CALLS / 4)} calls at saturation, ${WARM_SECONDS} s of the spread load, ${SERIAL_WARM_CALLS} calls at c=1). ` +
      `CPU per call is the proxy process's utime + stime (10 ms ticks) over the calls; ×nginx is the row's figure over nginx's. ` +
      `Skew: max/mean of what each nghttpd wrote during the load (wchar of /proc/<pid>/io, proportional to the calls it answered); calls per endpoint: the load's calls shared out in proportion to those bytes. ` +
      `Load average ${loadAtStart} at the start, ${loadAverage()} at the end${Math.max(loadAtStart, loadAverage()) > m.cores ? ': other work shared the cores, so the figures are noisy' : ''}.`,
  ].join('\n');
  const notes = [
    ...[...skipped].map(([name, why]) => `- ${name} skipped: ${why}`),
    ...errors.map((e) => `- error: ${e}`),
    `- ${Math.round((Date.now() - t0) / 1000)} s; command: ${command}`,
  ];
  const markdown = [header, balancedCpuTable(`${w.title}, three endpoints, round robin: CPU and latency`, RATE, summary), balancedSkewTable(RATE, summary), notes.join('\n')].join('\n\n') + '\n';
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(
    file,
    JSON.stringify(
      {
        date: date.toISOString(),
        machine: m,
        command,
        node,
        loadAverage: { start: loadAtStart, end: loadAverage() },
        settings: { rounds: ROUNDS, calls: CALLS, rate: RATE, warmSeconds: WARM_SECONDS, serialWarmCalls: SERIAL_WARM_CALLS, proxyCore: PROXY_CORE, loadCore: LOAD_CORE, endpoints: ENDPOINTS, spreadSeconds: SPREAD_SECONDS, serialCalls: w.serialCalls, c1Cycles: C1_CYCLES },
        workload: { id: w.id, path: w.path, saturation: w.saturation, spread: w.spread },
        summary,
        skipped: Object.fromEntries(skipped),
        errors,
        samples,
      },
      null,
      2,
    ) + '\n',
  );
  writeFileSync(file.replace(/\.json$/, '.md'), markdown);
  if (!partial) process.stdout.write(`\n${markdown}\nwritten: ${file} (and .md)\n`);
}
