// The proxies a benchmark sets side by side, each started for one route (how
// the client reaches it, what the upstream speaks) and pinned to the proxy core
// where it can be: rpcscope (relay or terminate, on a chosen Node binary; or
// outbound, balancing calls over several endpoints), the minimal node:http2
// pass-through, nginx, HAProxy and nghttpx from Debian. nginx, HAProxy and
// nghttpx take a route of several endpoints too, balanced round robin. A peer
// whose program is not installed is skipped with a line saying what installs it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSidecarProcess } from '../support/sidecar-process.ts';
import { freePort, waitForPort } from './bench-stats.ts';

/** How the load generator reaches the proxy: h2c (prior knowledge), HTTP/2 over TLS (ALPN h2), or HTTP/1.1. */
export type Frontend = 'h2c' | 'tls' | 'h1';

export interface Route {
  frontend: Frontend;
  /** `http://127.0.0.1:port` of the upstream, which speaks `upstreamProto` in cleartext. */
  upstream: string;
  upstreamProto: 'h2' | 'h1';
  /** The upstream as the client would reach it with no proxy (TLS for a TLS route). */
  direct: string;
  /**
   * The upstream's several endpoints (`http://127.0.0.1:port` each, speaking
   * `upstreamProto`), which the proxy balances round robin; unset: `upstream` alone.
   */
  endpoints?: readonly string[];
}

/** The endpoints a proxy sends a route's calls to, as host:port. */
const hostsOf = (route: Route): string[] => (route.endpoints ?? [route.upstream]).map((u) => new URL(u).host);

export interface BenchContext {
  work: string;
  certFile: string;
  keyFile: string;
  /** The core every proxy is pinned to, or undefined to leave them unpinned. */
  proxyCore: string | undefined;
}

export interface Target {
  url: string;
  /** The process whose CPU and memory are the proxy's (undefined for direct). */
  pid: number | undefined;
  stop(): Promise<void>;
}

export interface Peer {
  /** The row's name. */
  name: string;
  /** What `--only` matches (relay, terminate, floor, pipe, nginx, haproxy, nghttpx, direct). */
  key: string;
  /** The Node version it runs on, for Node rows. */
  node?: string;
  /** Starts it for `route`; a string says why it cannot run here (a program not installed). */
  start(route: Route, ctx: BenchContext): Promise<Target | string>;
}

// Debian installs nginx, haproxy and nghttpx in /usr/sbin, which a non-root user's PATH often lacks.
const SBIN_PATH = `${process.env.PATH}${delimiter}/usr/sbin${delimiter}/sbin`;
const installed = (program: string): boolean => spawnSync('sh', ['-c', `command -v ${program}`], { env: { ...process.env, PATH: SBIN_PATH } }).status === 0;
const scheme = (f: Frontend): string => (f === 'tls' ? 'https' : 'http');

/** Pins every thread of a running process (libuv's pool too) to the proxy core. */
function pin(pid: number, ctx: BenchContext): void {
  if (ctx.proxyCore !== undefined) spawnSync('taskset', ['-a', '-p', '-c', ctx.proxyCore, String(pid)], { stdio: 'ignore' });
}

/** argv prefixed with taskset for the proxy core; children inherit the affinity. */
const pinned = (ctx: BenchContext, argv: string[]): [string, string[]] => (ctx.proxyCore === undefined ? [argv[0]!, argv.slice(1)] : ['taskset', ['-c', ctx.proxyCore, ...argv]]);

/** The one worker a master process forks (nginx, nghttpx), else the process itself. */
async function workerOf(master: ChildProcess): Promise<number> {
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 100));
    const child = Number(spawnSync('pgrep', ['-P', String(master.pid)], { encoding: 'utf8' }).stdout.trim().split('\n')[0]) || 0;
    if (child) return child;
  }
  return master.pid!;
}

function stopProcess(proc: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill(signal);
  });
}

export const direct: Peer = {
  name: 'direct',
  key: 'direct',
  start: async (route) => ({ url: route.direct, pid: undefined, stop: async () => {} }),
};

/**
 * A process that accepts OTLP/HTTP exports and discards them, for the traced
 * rows: the sidecar's cost of tracing is measured without a collector's.
 */
async function startOtlpSink(): Promise<{ url: string; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['-e', "const s = require('node:http').createServer((q, r) => { q.resume(); q.on('end', () => r.end()); }); s.listen(0, '127.0.0.1', () => console.log(s.address().port));"], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    proc.stdout!.once('data', (d) => resolve(String(d).trim()));
    proc.once('exit', (code) => reject(new Error(`OTLP sink exited ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, stop: () => stopProcess(proc, 'SIGTERM') };
}

/**
 * rpcscope's own binary (sidecar/bin/rpcscope) on the Node at `nodeBin` (it execs the first `node` on PATH).
 * `dataPlane` applies to both versions: HTTP/2 (--data-plane) and HTTP/1.1 (--http1-data-plane).
 * `tracing`: with tracing on (every call a span, exported over OTLP/HTTP to a sink), which on the relay
 * means translate mode (each request header block written anew with a traceparent).
 * `otlp-metrics`: with OTLP metrics on, pushed to a sink every second (60 times the default interval,
 * so that the exports' cost shows), the row to set beside the plain one: a call should cost the same.
 */
export function rpcscope(dataPlane: 'relay' | 'terminate', nodeVersion: string, nodeBin: string, variant?: 'tracing' | 'otlp-metrics'): Peer {
  const suffix = variant === 'tracing' ? ' + tracing' : variant === 'otlp-metrics' ? ' + OTLP metrics' : '';
  return {
    name: `rpcscope ${dataPlane}${suffix}`,
    key: variant === 'tracing' ? `${dataPlane}-traced` : variant === 'otlp-metrics' ? `${dataPlane}-otlp` : dataPlane,
    node: nodeVersion,
    start: async (route, ctx) => {
      const args = ['--upstream', route.upstream, '--data-plane', dataPlane, '--http1-data-plane', dataPlane, '--upstream-protocol', route.upstreamProto === 'h2' ? 'http2' : 'http1', '--log-level', 'info'];
      if (route.frontend === 'tls') args.push('--tls-cert', ctx.certFile, '--tls-key', ctx.keyFile);
      const sink = variant ? await startOtlpSink() : undefined;
      const otel: Record<string, string> =
        sink === undefined ? {} : variant === 'tracing' ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: `${sink.url}/v1/metrics`, OTEL_METRIC_EXPORT_INTERVAL: '1000' };
      const sc = await startSidecarProcess(args, { PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH}`, ...otel });
      pin(sc.proc.pid!, ctx);
      return {
        url: `${scheme(route.frontend)}://127.0.0.1:${sc.port}`,
        pid: sc.proc.pid,
        stop: async () => {
          await sc.stop();
          await sink?.stop();
        },
      };
    },
  };
}

/**
 * rpcscope as an outbound sidecar (--mode outbound) in front of a route's
 * endpoints (--endpoints, round robin), toward HTTP/2 endpoints in cleartext:
 * the balanced relay (--outbound-data-plane relay, an endpoint picked per call
 * at frame level) or the terminating path (node:http2 per call). The route's
 * `upstream` names the service only: the endpoints are where calls go.
 */
export function rpcscopeOutbound(dataPlane: 'relay' | 'terminate', nodeVersion: string, nodeBin: string): Peer {
  return {
    name: dataPlane === 'relay' ? 'rpcscope balanced relay' : 'rpcscope terminate (outbound)',
    key: dataPlane === 'relay' ? 'balanced' : 'terminate',
    node: nodeVersion,
    start: async (route, ctx) => {
      if (route.frontend !== 'h2c' || route.upstreamProto !== 'h2') throw new Error('rpcscope outbound rows take h2c from the client and HTTP/2 to the endpoints');
      const args = ['--mode', 'outbound', '--upstream', 'http://bench.test:80', '--endpoints', hostsOf(route).join(','), '--balance', 'round_robin'];
      args.push('--outbound-data-plane', dataPlane, '--upstream-protocol', 'http2', '--log-level', 'info');
      const sc = await startSidecarProcess(args, { PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH}` });
      pin(sc.proc.pid!, ctx);
      return {
        url: `http://127.0.0.1:${sc.port}`,
        pid: sc.proc.pid,
        stop: async () => {
          await sc.stop();
        },
      };
    },
  };
}

/** A bench script beside this file (node-floor.ts, node-pipe.ts) run on `nodeBin` as a proxy: argv `frontend upstream cert key`, its URL on stdout. */
function nodeScript(name: string, key: string, file: string, nodeVersion: string, nodeBin: string): Peer {
  const script = fileURLToPath(new URL(file, import.meta.url));
  return {
    name,
    key,
    node: nodeVersion,
    start: async (route, ctx) => {
      const proc = spawn(nodeBin, ['--import', 'tsx', script, route.frontend, route.upstream, ctx.certFile, ctx.keyFile], { stdio: ['ignore', 'pipe', 'inherit'], cwd: dirname(script) });
      const url = await new Promise<string>((resolve, reject) => {
        proc.stdout!.once('data', (d) => resolve(String(d).trim()));
        proc.once('exit', (code) => reject(new Error(`${file} exited ${code}`)));
      });
      pin(proc.pid!, ctx);
      return { url, pid: proc.pid, stop: () => stopProcess(proc, 'SIGTERM') };
    },
  };
}

/** The minimal node:http2 (node:http) pass-through: the floor of a proxy on Node's HTTP stacks. */
export const nodeFloor = (nodeVersion: string, nodeBin: string): Peer => nodeScript('node:http2 floor', 'floor', 'node-floor.ts', nodeVersion, nodeBin);

/** A 1:1 byte pipe on net.Socket, nothing parsed: the floor of any relay on Node. */
export const nodePipe = (nodeVersion: string, nodeBin: string): Peer => nodeScript('Node byte pipe', 'pipe', 'node-pipe.ts', nodeVersion, nodeBin);

/** nginx: grpc_pass for HTTP/2 routes, proxy_pass with upstream keep-alive for HTTP/1.1; one worker; several endpoints in round robin (its default). */
export const nginx: Peer = {
  name: 'nginx',
  key: 'nginx',
  start: async (route, ctx) => {
    if (!installed('nginx')) return 'nginx not installed (apt-get install nginx-light)';
    const dir = mkdtempSync(join(ctx.work, 'nginx-'));
    const port = await freePort();
    const listen = route.frontend === 'h2c' ? 'http2' : route.frontend === 'tls' ? `ssl http2; ssl_certificate ${ctx.certFile}; ssl_certificate_key ${ctx.keyFile}` : '';
    const pass = route.upstreamProto === 'h2' ? 'grpc_pass grpc://app;' : 'proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Connection "";';
    writeFileSync(join(dir, 'nginx.conf'), `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log stderr error;
events { worker_connections 8192; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  # nginx closes a client connection after 1000 calls by default; h2load would count that as failures.
  http2_max_requests 10000000; keepalive_requests 10000000;
  upstream app { ${hostsOf(route).map((h) => `server ${h};`).join(' ')} keepalive 64; keepalive_requests 10000000; }
  server { listen 127.0.0.1:${port} ${listen}; location / { ${pass} } } }
`);
    const [cmd, argv] = pinned(ctx, ['nginx', '-p', dir, '-c', join(dir, 'nginx.conf')]);
    const master = spawn(cmd, argv, { stdio: 'ignore', env: { ...process.env, PATH: SBIN_PATH } });
    const pid = await workerOf(master);
    await waitForPort(port, 'nginx');
    return { url: `${scheme(route.frontend)}://127.0.0.1:${port}`, pid, stop: () => stopProcess(master, 'SIGQUIT') };
  },
};

/** HAProxy in HTTP mode, one thread: `proto h2` on the h2c bind and toward an HTTP/2 upstream, ALPN h2 on the TLS bind; one `server` line per endpoint, `balance roundrobin`. */
export const haproxy: Peer = {
  name: 'HAProxy',
  key: 'haproxy',
  start: async (route, ctx) => {
    if (!installed('haproxy')) return 'haproxy not installed (apt-get install haproxy)';
    const dir = mkdtempSync(join(ctx.work, 'haproxy-'));
    const port = await freePort();
    const pem = join(dir, 'cert.pem');
    writeFileSync(pem, readFileSync(ctx.certFile, 'utf8') + readFileSync(ctx.keyFile, 'utf8'));
    const bind = route.frontend === 'h2c' ? 'proto h2' : route.frontend === 'tls' ? `ssl crt ${pem} alpn h2` : '';
    writeFileSync(join(dir, 'haproxy.cfg'), `global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
frontend bench
  bind 127.0.0.1:${port} ${bind}
  default_backend app
backend app
  balance roundrobin
  http-reuse always
${hostsOf(route).map((h, i) => `  server app${i} ${h} ${route.upstreamProto === 'h2' ? 'proto h2' : ''}`).join('\n')}
`);
    const [cmd, argv] = pinned(ctx, ['haproxy', '-db', '-f', join(dir, 'haproxy.cfg')]);
    const proc = spawn(cmd, argv, { stdio: 'ignore', env: { ...process.env, PATH: SBIN_PATH } });
    await waitForPort(port, 'haproxy');
    return { url: `${scheme(route.frontend)}://127.0.0.1:${port}`, pid: proc.pid, stop: () => stopProcess(proc, 'SIGTERM') };
  },
};

/** nghttpx (Debian nghttp2-proxy), one worker; its cleartext frontend takes h2c and HTTP/1.1 alike; one `-b` per endpoint, all on the same (catch-all) pattern, which nghttpx balances. */
export const nghttpx: Peer = {
  name: 'nghttpx',
  key: 'nghttpx',
  start: async (route, ctx) => {
    if (!installed('nghttpx')) return 'nghttpx not installed (apt-get install nghttp2-proxy)';
    const port = await freePort();
    const frontend = route.frontend === 'tls' ? `127.0.0.1,${port}` : `127.0.0.1,${port};no-tls`;
    const backends = hostsOf(route).flatMap((h) => ['-b', `${h.replace(':', ',')};;${route.upstreamProto === 'h2' ? 'proto=h2' : 'proto=http/1.1'}`]);
    const args = ['nghttpx', '--conf=/dev/null', '-f', frontend, ...backends, '-n', '1', '--no-ocsp', '--no-via', '--errorlog-file=/dev/null', '--backend-connections-per-host=64', '--frontend-http2-max-concurrent-streams=1000'];
    if (route.frontend === 'tls') args.push(ctx.keyFile, ctx.certFile);
    const [cmd, argv] = pinned(ctx, args);
    const master = spawn(cmd, argv, { stdio: 'ignore', env: { ...process.env, PATH: SBIN_PATH } });
    await waitForPort(port, 'nghttpx');
    const pid = await workerOf(master);
    return { url: `${scheme(route.frontend)}://127.0.0.1:${port}`, pid, stop: () => stopProcess(master, 'SIGQUIT') };
  },
};
