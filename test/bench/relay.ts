// The inbound HTTP/2 fast path against its peers, side by side in one run:
// gRPC unary calls (256-byte messages) to a fast h2c upstream (nghttpd from
// Debian's nghttp2-server), directly and through rpcscope's relay
// (--data-plane relay), rpcscope terminating each call (--data-plane
// terminate), both again with tracing on (spans exported over OTLP to a sink
// process; the relay then writes each request's header block anew with the
// call's traceparent: translate mode) and nginx grpc_pass. Each proxy is pinned to core 0 and h2load
// to core 1; a proxy's CPU comes from /proc/<pid>/stat (utime + stime).
// Three loads: saturation (-c 16 -m 10), a fixed rate (h2load --rps), and one
// call at a time (c=1), whose median latency less the direct one is the
// latency the proxy adds. Prints a Markdown table and writes JSON under
// test/bench/results/. Figures to compare, not assertions.
//   node --import tsx test/bench/relay.ts [--calls 20000] [--rate 2000] [--rounds 1]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const CALLS = opt('--calls', 20_000);
const RATE = opt('--rate', 2000);
const ROUNDS = opt('--rounds', 1);
const CLK_TCK = 100;
const PROXY_CORE = '0';
const LOAD_CORE = '1';

const work = mkdtempSync(join(tmpdir(), 'rpcscope-bench-relay-'));
const GRPC_MESSAGE = Buffer.concat([Buffer.from([0, 0, 0, 1, 0]), Buffer.alloc(256, 1)]);
writeFileSync(join(work, 'request.bin'), GRPC_MESSAGE);
mkdirSync(join(work, 'docroot'));
// nghttpd answers every POST with the file at its path: one 256-byte gRPC message.
writeFileSync(join(work, 'docroot', 'Unary'), GRPC_MESSAGE);
const PATH = '/Unary';
const H2LOAD_GRPC = ['-d', join(work, 'request.bin'), '-H', 'content-type: application/grpc', '-H', 'te: trailers'];

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}

/** utime + stime of a process, in seconds (Linux /proc). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

interface Load {
  rps: number;
  ok: number;
  failed: number;
  p50Us: number;
}

function h2load(url: string, shape: string[], calls: number): Load {
  const log = join(work, 'h2load.log');
  const r = spawnSync('taskset', ['-c', LOAD_CORE, 'h2load', '-n', String(calls), ...shape, ...H2LOAD_GRPC, `--log-file=${log}`, url + PATH], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`h2load failed: ${r.stderr || r.stdout}`);
  const rps = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(r.stdout)?.[1]);
  const status = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(r.stdout);
  const durations = readFileSync(log, 'utf8').trim().split('\n').map((l) => Number(l.split('\t')[2])).sort((a, b) => a - b);
  return { rps, ok: Number(status?.[1]), failed: Number(status?.[2]), p50Us: durations[Math.floor(durations.length / 2)] ?? NaN };
}

interface Target {
  name: string;
  url: string;
  /** The process whose CPU is the proxy's (undefined for direct). */
  pid: number | undefined;
  /** Its resident memory once started, before any call. */
  idleRssMiB: number;
  stop(): Promise<void>;
}

async function startNghttpd(): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn('nghttpd', ['--no-tls', '-d', join(work, 'docroot'), String(port)], { stdio: 'ignore' });
  await waitForPort(port);
  return { url: `http://127.0.0.1:${port}`, proc };
}

/**
 * An OTLP/HTTP endpoint that takes and drops span exports, in a process of its
 * own on the load core (this process blocks while h2load runs).
 */
async function startOtlpSink(): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const code = `require('node:http').createServer((q, s) => { q.resume(); q.on('end', () => s.writeHead(200, { 'content-type': 'application/json' }).end('{}')); }).listen(${port}, '127.0.0.1')`;
  const proc = spawn('taskset', ['-c', LOAD_CORE, process.execPath, '-e', code], { stdio: 'ignore' });
  await waitForPort(port);
  return { url: `http://127.0.0.1:${port}`, proc };
}

async function startRpcscope(name: string, upstream: string, dataPlane: string, env: Record<string, string> = {}): Promise<Target> {
  const sc: SidecarProcess = await startSidecarProcess(['--upstream', upstream, '--data-plane', dataPlane, '--log-level', 'info'], env);
  // bin/rpcscope execs node: the pid is the sidecar's. -a pins every thread (libuv's pool too).
  spawnSync('taskset', ['-a', '-p', '-c', PROXY_CORE, String(sc.proc.pid)], { stdio: 'ignore' });
  return { name, url: sc.url, pid: sc.proc.pid, idleRssMiB: rssMiB(sc.proc.pid!), stop: async () => void (await sc.stop()) };
}

/** nginx with grpc_pass, one worker pinned to the proxy core; its keep-alive pool toward the upstream as a user would set it. */
async function startNginx(upstream: string): Promise<Target | undefined> {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) return undefined;
  const dir = mkdtempSync(join(work, 'nginx-'));
  const port = await freePort();
  writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1; worker_cpu_affinity 1; daemon off; pid ${dir}/nginx.pid; error_log stderr error;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  http2_max_requests 10000000; keepalive_requests 10000000;
  upstream app { server ${new URL(upstream).host}; keepalive 64; keepalive_requests 10000000; }
  server { listen 127.0.0.1:${port} http2; location / { grpc_pass grpc://app; } } }
`);
  const master = spawn('taskset', ['-c', PROXY_CORE, 'nginx', '-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  let workerPid = 0;
  for (let i = 0; i < 50 && !workerPid; i++) {
    await new Promise((r) => setTimeout(r, 100));
    workerPid = Number(spawnSync('pgrep', ['-P', String(master.pid)], { encoding: 'utf8' }).stdout.trim().split('\n')[0]) || 0;
  }
  if (!workerPid) {
    master.kill();
    return undefined;
  }
  await waitForPort(port);
  return { name: 'nginx grpc_pass', url: `http://127.0.0.1:${port}`, pid: workerPid, idleRssMiB: rssMiB(workerPid), stop: async () => void master.kill('SIGQUIT') };
}

interface Row {
  target: string;
  round: number;
  saturation: Load & { cpuUsPerCall: number };
  fixedRate: Load & { cpuUsPerCall: number };
  serial: Load & { cpuUsPerCall: number };
  idleRssMiB: number;
  rssMiB: number;
}

function measure(t: Target, shape: string[], calls: number): Load & { cpuUsPerCall: number } {
  const c0 = t.pid ? cpuSeconds(t.pid) : 0;
  const load = h2load(t.url, shape, calls);
  const cpuUsPerCall = t.pid ? ((cpuSeconds(t.pid) - c0) / calls) * 1e6 : NaN;
  return { ...load, cpuUsPerCall };
}

const SATURATION = ['-c', '16', '-m', '10'];
const FIXED_RATE = ['-c', '4', '-m', '10', `--rps=${RATE / 4}`];
const SERIAL = ['-c', '1', '-m', '1'];
const fixedRateCalls = Math.min(CALLS, RATE * 5);
const serialCalls = Math.min(CALLS, 3000);

const upstream = await startNghttpd();
const otlp = await startOtlpSink();
const TRACING = { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url };
const rows: Row[] = [];
try {
  for (let round = 1; round <= ROUNDS; round++) {
    const starters: (() => Promise<Target | undefined>)[] = [
      async () => ({ name: 'direct (nghttpd)', url: upstream.url, pid: undefined, idleRssMiB: NaN, stop: async () => {} }),
      () => startRpcscope('rpcscope relay', upstream.url, 'relay'),
      () => startRpcscope('rpcscope terminate', upstream.url, 'terminate'),
      () => startRpcscope('rpcscope relay, tracing (translate)', upstream.url, 'relay', TRACING),
      () => startRpcscope('rpcscope terminate, tracing', upstream.url, 'terminate', TRACING),
      () => startNginx(upstream.url),
    ];
    for (const start of starters) {
      const t = await start();
      if (!t) {
        process.stderr.write('nginx not installed: skipped\n');
        continue;
      }
      try {
        // Warm the JIT and the connections before measuring.
        h2load(t.url, SATURATION, 5000);
        const saturation = measure(t, SATURATION, CALLS);
        const fixedRate = measure(t, FIXED_RATE, fixedRateCalls);
        const serial = measure(t, SERIAL, serialCalls);
        rows.push({ target: t.name, round, saturation, fixedRate, serial, idleRssMiB: t.idleRssMiB, rssMiB: t.pid ? rssMiB(t.pid) : NaN });
      } finally {
        await t.stop();
      }
    }
  }
} finally {
  upstream.proc.kill('SIGTERM');
  otlp.proc.kill('SIGTERM');
}

const median = (xs: number[]): number => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};
const names = [...new Set(rows.map((r) => r.target))];
const directP50 = median(rows.filter((r) => r.target.startsWith('direct')).map((r) => r.serial.p50Us));
const summary = names.map((name) => {
  const rs = rows.filter((r) => r.target === name);
  const m = (f: (r: Row) => number): number => median(rs.map(f));
  return {
    target: name,
    saturationRps: m((r) => r.saturation.rps),
    saturationCpuUs: m((r) => r.saturation.cpuUsPerCall),
    fixedRateRps: m((r) => r.fixedRate.rps),
    fixedRateCpuUs: m((r) => r.fixedRate.cpuUsPerCall),
    serialP50Us: m((r) => r.serial.p50Us),
    addedP50Us: name.startsWith('direct') ? 0 : m((r) => r.serial.p50Us) - directP50,
    failed: rs.reduce((n, r) => n + r.saturation.failed + r.fixedRate.failed + r.serial.failed, 0),
    idleRssMiB: m((r) => r.idleRssMiB),
    rssMiB: m((r) => r.rssMiB),
  };
});

const f0 = (x: number): string => (Number.isNaN(x) ? '' : x.toFixed(0));
const f1 = (x: number): string => (Number.isNaN(x) ? '' : x.toFixed(1));
const table = [
  `gRPC unary, 256 B messages, nghttpd upstream; proxies on core ${PROXY_CORE}, h2load on core ${LOAD_CORE}; ${ROUNDS === 1 ? 'one round' : `medians of ${ROUNDS} rounds`}`,
  '',
  `| | saturation (c16 m10) req/s | CPU µs/call | ${RATE} calls/s: CPU µs/call | c=1 p50 µs | added p50 µs | failed | RSS MiB idle / after |`,
  '|---|---|---|---|---|---|---|---|',
  ...summary.map((s) => `| ${s.target} | ${f0(s.saturationRps)} | ${f1(s.saturationCpuUs)} | ${f1(s.fixedRateCpuUs)} | ${f0(s.serialP50Us)} | ${f0(s.addedP50Us)} | ${s.failed} | ${f0(s.idleRssMiB)} / ${f0(s.rssMiB)} |`),
].join('\n');
process.stdout.write(table + '\n');

const resultsDir = fileURLToPath(new URL('results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = join(resultsDir, `relay-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
writeFileSync(file, JSON.stringify({ node: process.version, calls: CALLS, rate: RATE, rounds: ROUNDS, summary, rows }, null, 2) + '\n');
process.stdout.write(`\nwritten: ${file}\n`);
