// End-to-end load benchmark: h2load (Debian nghttp2-client) against the echo
// upstream directly and through rpcscope, each in its own process, side by side
// in one run. Prints throughput, latency, and the sidecar's CPU and memory per
// call — figures to compare, not assertions (machines here are shared).
//   node --import tsx test/bench/load.ts [--calls 20000] [--clients 8] [--streams 8]
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
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
const CLIENTS = opt('--clients', 8);
const STREAMS = opt('--streams', 8);
const CLK_TCK = 100;

async function startUpstream(impl: string): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('upstream-process.ts', import.meta.url)), impl], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.once('data', (d) => resolve(String(d).trim()));
    proc.once('exit', (code) => reject(new Error(`upstream exited ${code}`)));
  });
  return { url, proc };
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

/** The node process behind bin/rpcscope (the shell script execs node, so it is the same pid). */
function pidOf(sc: SidecarProcess): number {
  return sc.proc.pid!;
}

interface LoadResult {
  rps: number;
  meanMs: number;
  maxMs: number;
  ok: number;
  failed: number;
}

function h2load(url: string, extra: string[]): LoadResult {
  const r = spawnSync('h2load', ['-n', String(CALLS), '-c', String(CLIENTS), '-m', String(STREAMS), ...extra, url], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`h2load failed: ${r.stderr || r.stdout}`);
  const out = r.stdout;
  const rps = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(out)?.[1]);
  const lat = /time for request:\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)\s+([\d.]+)(us|ms|s)/.exec(out);
  const toMs = (v: string, u: string): number => Number(v) * (u === 'us' ? 0.001 : u === 's' ? 1000 : 1);
  const status = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(out);
  return { rps, meanMs: lat ? toMs(lat[5]!, lat[6]!) : NaN, maxMs: lat ? toMs(lat[3]!, lat[4]!) : NaN, ok: Number(status?.[1]), failed: Number(status?.[2]) };
}

/**
 * nginx with grpc_pass, the proxy many users would put in front of a gRPC service
 * instead: same upstream, same load. Skipped (and said so) where nginx is not installed.
 */
async function startNginx(upstreamUrl: string): Promise<{ url: string; workerPid: number; stop(): void } | undefined> {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-bench-nginx-'));
  const port = 20000 + Math.floor(Math.random() * 20000);
  writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log stderr error;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  # nginx closes a client connection after 1000 calls by default; h2load counts that as failures.
  http2_max_requests 10000000; keepalive_requests 10000000;
  upstream app { server ${new URL(upstreamUrl).host}; keepalive 16; keepalive_requests 10000000; }
  server { listen 127.0.0.1:${port} http2; location / { grpc_pass grpc://app; } } }
`);
  const master = spawn('nginx', ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: 'ignore' });
  let workerPid = 0;
  for (let i = 0; i < 50 && !workerPid; i++) {
    await new Promise((r) => setTimeout(r, 100));
    workerPid = Number(spawnSync('pgrep', ['-P', String(master.pid)], { encoding: 'utf8' }).stdout.trim().split('\n')[0]) || 0;
  }
  if (!workerPid) {
    master.kill();
    return undefined;
  }
  return { url: `http://127.0.0.1:${port}`, workerPid, stop: () => master.kill('SIGQUIT') };
}

const emptyMessage = join(tmpdir(), 'rpcscope-bench-empty.bin');
writeFileSync(emptyMessage, Buffer.from([0, 0, 0, 0, 0]));
const SCENARIOS: { name: string; impl: string; path: string; extra: string[]; nginx: boolean }[] = [
  { name: 'gRPC unary (grpc-js upstream)', impl: 'grpc-js', path: '/echo.v1.EchoService/Echo', extra: ['-d', emptyMessage, '-H', 'content-type: application/grpc', '-H', 'te: trailers'], nginx: true },
  { name: 'REST GET over h2c (connect-node upstream)', impl: 'connect', path: '/v1/echo/42', extra: [], nginx: false },
];

const rows: string[][] = [];
for (const s of SCENARIOS) {
  const upstream = await startUpstream(s.impl);
  const sidecar = await startSidecarProcess(['--upstream', upstream.url]);
  try {
    // Warm both paths (JIT, connections) before measuring.
    h2load(upstream.url + s.path, [...s.extra, '-n', '2000']);
    h2load(sidecar.url + s.path, [...s.extra, '-n', '2000']);
    const direct = h2load(upstream.url + s.path, s.extra);
    const cpu0 = cpuSeconds(pidOf(sidecar));
    const proxied = h2load(sidecar.url + s.path, s.extra);
    const cpuPerCallUs = ((cpuSeconds(pidOf(sidecar)) - cpu0) / CALLS) * 1e6;
    const rss = rssMiB(pidOf(sidecar));
    rows.push([s.name, 'direct', direct.rps.toFixed(0), direct.meanMs.toFixed(2), direct.maxMs.toFixed(1), `${direct.ok}/${direct.failed}`, '', '']);
    rows.push([s.name, 'via rpcscope', proxied.rps.toFixed(0), proxied.meanMs.toFixed(2), proxied.maxMs.toFixed(1), `${proxied.ok}/${proxied.failed}`, cpuPerCallUs.toFixed(0), rss.toFixed(0)]);
    const nginx = s.nginx ? await startNginx(upstream.url) : undefined;
    if (s.nginx && !nginx) rows.push([s.name, 'via nginx', 'nginx not installed', '', '', '', '', '']);
    if (nginx) {
      try {
        h2load(nginx.url + s.path, [...s.extra, '-n', '2000']);
        const n0 = cpuSeconds(nginx.workerPid);
        const viaNginx = h2load(nginx.url + s.path, s.extra);
        const nginxUs = ((cpuSeconds(nginx.workerPid) - n0) / CALLS) * 1e6;
        rows.push([s.name, 'via nginx grpc_pass', viaNginx.rps.toFixed(0), viaNginx.meanMs.toFixed(2), viaNginx.maxMs.toFixed(1), `${viaNginx.ok}/${viaNginx.failed}`, nginxUs.toFixed(0), rssMiB(nginx.workerPid).toFixed(0)]);
      } finally {
        nginx.stop();
      }
    }
  } finally {
    await sidecar.stop();
    upstream.proc.kill('SIGTERM');
  }
}

const head = ['scenario', 'path', 'req/s', 'mean ms', 'max ms', 'ok/failed', 'proxy CPU µs/call', 'proxy RSS MiB'];
const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]): string => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
process.stdout.write(`h2load -n ${CALLS} -c ${CLIENTS} -m ${STREAMS}, upstream and sidecar each in a process of their own\n`);
process.stdout.write(line(head) + '\n' + rows.map(line).join('\n') + '\n');
