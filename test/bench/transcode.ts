// The cost of JSON transcoding, in the load benchmark's harness: the demo's
// 18-field order (GetOrder; about 1.2 kB as JSON) fetched from one order
// service (connect-node, no simulated service time, in a process of its own)
//   - as raw gRPC through rpcscope,
//   - as REST JSON transcoded by rpcscope (--transcode --proto demo/proto) to
//     the same service's gRPC method,
//   - as REST served natively by the service, through rpcscope without
//     --transcode,
// and both protocols directly for reference. rpcscope is pinned to core 0 and
// h2load to core 1; its CPU comes from /proc. At saturation (calls/s, p50,
// p99, CPU per call) and at a fixed rate (p50, p99, CPU per call). Prints the
// transcoded path against raw gRPC next to the figure reported for .NET 9's
// in-process JSON transcoding (15 % less throughput, 50 % higher p99), and
// writes JSON and Markdown under test/bench/results/.
//
//   node --import tsx test/bench/transcode.ts [--rounds 3] [--calls 20000] [--rate 1000] [--quick] [--h1] [--no-pin]
//
// REST goes over h2c like gRPC, so that the two differ only by the
// translation; --h1 sends REST over HTTP/1.1 instead.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { create, toBinary, toJson } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { GetOrderRequestSchema, OrderSchema, OrderService } from '@rpcscope/demo/gen/order/v1/order_pb.ts';
import { startSidecarProcess } from '../support/sidecar-process.ts';
import { cpuSeconds, loadAverage, machine } from './bench-stats.ts';
import { f0, f1, increasePercent, lossPercent, median, ratio, type Phase } from './bench-report.ts';
import { h2load } from './h2load.ts';
import { grpcFrame } from './workloads.ts';

const args = process.argv.slice(2);
const flag = (name: string): boolean => args.includes(name);
const value = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const QUICK = flag('--quick');
const ROUNDS = Number(value('--rounds') ?? 1);
const CALLS = Number(value('--calls') ?? (QUICK ? 5000 : 20_000));
const RATE = Number(value('--rate') ?? (QUICK ? 500 : 1000));
const REST_H1 = flag('--h1');
const PROXY_CORE = flag('--no-pin') ? undefined : '0';
const LOAD_CORE = flag('--no-pin') ? undefined : '1';
for (const [name, v] of [['--rounds', ROUNDS], ['--calls', CALLS], ['--rate', RATE]] as const) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`${name} must be a positive integer, got ${value(name)}`);
}
/** The field report this is compared with: .NET 9 AddJsonTranscoding() against raw gRPC. */
const DOTNET = { throughputLossPct: 15, p99IncreasePct: 50 };

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-transcode-'));
const ORDER_ID = 'ord-000001';
writeFileSync(join(work, 'get-order.bin'), grpcFrame(toBinary(GetOrderRequestSchema, create(GetOrderRequestSchema, { id: ORDER_ID }))));
const GRPC = { path: '/order.v1.OrderService/GetOrder', request: ['-d', join(work, 'get-order.bin'), '-H', 'content-type: application/grpc', '-H', 'te: trailers'] };
const REST = { path: `/v1/orders/${ORDER_ID}`, request: [...(REST_H1 ? ['--h1'] : []), '-H', 'accept: application/json'] };
const SATURATION = REST_H1 ? { grpc: ['-c', '16', '-m', '10'], rest: ['-c', '32', '-m', '1'] } : { grpc: ['-c', '16', '-m', '10'], rest: ['-c', '16', '-m', '10'] };
const FIXED = { grpc: ['-c', '4', '-m', '10', `--rps=${RATE / 4}`], rest: REST_H1 ? ['-c', '8', '-m', '1', `--rps=${RATE / 8}`] : ['-c', '4', '-m', '10', `--rps=${RATE / 4}`] };

async function startUpstream(): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('upstream-process.ts', import.meta.url)), 'order'], { stdio: ['ignore', 'pipe', 'inherit'], cwd: fileURLToPath(new URL('.', import.meta.url)) });
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.once('data', (d) => resolve(String(d).trim()));
    proc.once('exit', (code) => reject(new Error(`order service exited ${code}`)));
  });
  return { url, proc };
}

interface Row {
  name: string;
  /** Which call: gRPC GetOrder or REST GET /v1/orders/{id}. */
  call: 'grpc' | 'rest';
  /** rpcscope's flags, or undefined for the direct rows. */
  sidecar: string[] | undefined;
}

const loadAtStart = loadAverage();
const upstream = await startUpstream();
const transcodeFlags = ['--transcode', '--proto', join(ROOT, 'demo/proto')];
const ROWS: Row[] = [
  { name: 'gRPC, direct', call: 'grpc', sidecar: undefined },
  { name: 'REST, direct (served natively)', call: 'rest', sidecar: undefined },
  { name: 'raw gRPC through rpcscope', call: 'grpc', sidecar: transcodeFlags },
  { name: 'REST transcoded by rpcscope to gRPC', call: 'rest', sidecar: transcodeFlags },
  { name: 'REST served natively, through rpcscope', call: 'rest', sidecar: [] },
];

interface Sample {
  row: string;
  round: number;
  saturation: Phase;
  fixedRate: Phase;
}
const samples: Sample[] = [];
const notes: string[] = [];

/**
 * The three paths must return the same order, or the comparison is of unlike
 * things; h2load only sees HTTP statuses, so one call of each is checked here.
 */
async function checkSameAnswer(): Promise<void> {
  const sc = await startSidecarProcess(['--upstream', upstream.url, ...transcodeFlags, '--log-level', 'info']);
  try {
    const [transcoded, native] = await Promise.all([fetch(sc.url + REST.path), fetch(upstream.url + REST.path)]);
    const [a, b] = [await transcoded.json(), await native.json()];
    const viaGrpc = toJson(OrderSchema, await createClient(OrderService, createGrpcTransport({ baseUrl: sc.url })).getOrder({ id: ORDER_ID }));
    const same = transcoded.status === 200 && isDeepStrictEqual(a, b) && isDeepStrictEqual(viaGrpc, b);
    const line = `the transcoded REST answer and the gRPC answer through rpcscope ${same ? 'equal' : 'DIFFER from'} the native REST answer (HTTP ${transcoded.status}, ${JSON.stringify(a).length} B of JSON)`;
    notes.push(line);
    process.stderr.write(line + '\n');
  } finally {
    await sc.stop();
  }
}

try {
  await checkSameAnswer();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const row of ROWS) {
      process.stderr.write(`round ${round}: ${row.name}\n`);
      const sc = row.sidecar ? await startSidecarProcess(['--upstream', upstream.url, ...row.sidecar, '--log-level', 'info']) : undefined;
      if (sc && PROXY_CORE !== undefined) spawnSync('taskset', ['-a', '-p', '-c', PROXY_CORE, String(sc.proc.pid)], { stdio: 'ignore' });
      const pid = sc?.proc.pid;
      const url = (sc?.url ?? upstream.url) + (row.call === 'grpc' ? GRPC.path : REST.path);
      const request = row.call === 'grpc' ? GRPC.request : REST.request;
      const measure = (shape: string[], calls: number): Phase => {
        const c0 = pid ? cpuSeconds(pid) : 0;
        const load = h2load(url, shape, request, calls, LOAD_CORE);
        return { ...load, cpuUsPerCall: pid ? ((cpuSeconds(pid) - c0) / ((load.ok + load.failed) || calls)) * 1e6 : NaN };
      };
      try {
        h2load(url, SATURATION[row.call], request, Math.ceil(CALLS / 4), LOAD_CORE);
        const saturation = measure(SATURATION[row.call], CALLS);
        const fixedRate = measure(FIXED[row.call], Math.min(CALLS, RATE * 5));
        samples.push({ row: row.name, round, saturation, fixedRate });
      } catch (err) {
        notes.push(`error: ${row.name}: ${(err as Error).message.split('\n')[0]}`);
      } finally {
        await sc?.stop();
      }
    }
  }
} finally {
  upstream.proc.kill('SIGTERM');
}

const summary = ROWS.map((row) => {
  const rs = samples.filter((s) => s.row === row.name);
  const m = (f: (s: Sample) => number): number => median(rs.map(f));
  return {
    row: row.name,
    rps: m((s) => s.saturation.rps),
    p50Us: m((s) => s.saturation.p50Us),
    p99Us: m((s) => s.saturation.p99Us),
    cpuUsPerCall: m((s) => s.saturation.cpuUsPerCall),
    fixedP50Us: m((s) => s.fixedRate.p50Us),
    fixedP99Us: m((s) => s.fixedRate.p99Us),
    fixedCpuUsPerCall: m((s) => s.fixedRate.cpuUsPerCall),
    failed: rs.reduce((n, s) => n + s.saturation.failed + s.fixedRate.failed, 0),
  };
});
const raw = summary[2]!;
const transcoded = summary[3]!;
const native = summary[4]!;
const comparison = {
  throughputLossPct: lossPercent(transcoded.rps, raw.rps),
  p99IncreasePct: increasePercent(transcoded.p99Us, raw.p99Us),
  fixedRateP99IncreasePct: increasePercent(transcoded.fixedP99Us, raw.fixedP99Us),
  cpuRatio: ratio(transcoded.cpuUsPerCall, raw.cpuUsPerCall),
  nativeRestCpuRatio: ratio(native.cpuUsPerCall, raw.cpuUsPerCall),
};
const pct = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(0)} %` : '–');
const times = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');

const m = machine();
const date = new Date();
const markdown = [
  `### JSON transcoding benchmark, ${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
  '',
  `${m.cpu}, ${m.cores} cores, Linux ${m.kernel}, Node ${process.versions.node}; GetOrder of the 18-field order from the demo's order service (connect-node, one process, unpinned); ` +
    `REST over ${REST_H1 ? 'HTTP/1.1' : 'h2c'}, gRPC over h2c; ${PROXY_CORE === undefined ? 'nothing pinned' : `rpcscope on core ${PROXY_CORE}, h2load on core ${LOAD_CORE}`}; ` +
    `${ROUNDS === 1 ? 'one round' : `medians of ${ROUNDS} rounds`}; saturation ${CALLS} calls (c16${REST_H1 ? ', REST c32' : ''}), then ${RATE} calls/s. CPU is rpcscope's, per call. ` +
    `Load average ${loadAtStart} at the start, ${loadAverage()} at the end${Math.max(loadAtStart, loadAverage()) > m.cores ? ': other work shared the cores, so the figures are noisy' : ''}.`,
  '',
  `| | saturation calls/s | p50 µs | p99 µs | CPU µs/call | ${RATE}/s: p50 µs | p99 µs | CPU µs/call | failed |`,
  '|---|---|---|---|---|---|---|---|---|',
  ...summary.map((s) => `| ${s.row} | ${f0(s.rps)} | ${f0(s.p50Us)} | ${f0(s.p99Us)} | ${f1(s.cpuUsPerCall)} | ${f0(s.fixedP50Us)} | ${f0(s.fixedP99Us)} | ${f1(s.fixedCpuUsPerCall)} | ${s.failed} |`),
  '',
  '| transcoded REST against raw gRPC, both through rpcscope | this run | .NET 9 JSON transcoding (field report) |',
  '|---|---|---|',
  `| throughput at saturation | ${pct(-comparison.throughputLossPct)} | −${DOTNET.throughputLossPct} % |`,
  `| p99 at saturation | ${pct(comparison.p99IncreasePct)} | +${DOTNET.p99IncreasePct} % |`,
  `| p99 at ${RATE} calls/s | ${pct(comparison.fixedRateP99IncreasePct)} | |`,
  `| rpcscope CPU per call | ${times(comparison.cpuRatio)} (native REST: ${times(comparison.nativeRestCpuRatio)}) | |`,
  '',
  ...notes.map((n) => `- ${n}`),
  `- command: node --import tsx test/bench/transcode.ts ${args.join(' ')}`.trimEnd(),
].join('\n') + '\n';
process.stdout.write('\n' + markdown);

const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `transcode-${date.toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(
  file,
  JSON.stringify(
    { date: date.toISOString(), machine: m, loadAverage: { start: loadAtStart, end: loadAverage() }, node: process.version, command: `node --import tsx test/bench/transcode.ts ${args.join(' ')}`.trimEnd(), settings: { rounds: ROUNDS, calls: CALLS, rate: RATE, restOver: REST_H1 ? 'http/1.1' : 'h2c' }, summary, comparison, dotnet: DOTNET, notes, samples },
    null,
    2,
  ) + '\n',
);
writeFileSync(file.replace(/\.json$/, '.md'), markdown);
process.stdout.write(`\nwritten: ${file} (and .md)\n`);
