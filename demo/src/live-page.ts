// The demo's panel page: a real Prometheus (Debian's `prometheus`, when it is
// on PATH) scraping the demo's sidecars every second with the repo's
// recording rules, and a local page showing the built panel plugin
// (grafana-plugin/dist) in its three modes on what that Prometheus answers,
// loaded by the same harness the panel's browser tests use.
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST_DIR, buildPlugin } from '../../test/panel/harness-server.ts';
import { cachedHarnessBundle } from './harness-bundle-cache.ts';
import { beforeAfterQueries, podQueries, protocolQueries, type PanelQuery } from '../../test/panel/panel-queries.ts';
import { LIVE_PAGE, PANEL_PAGE, UPLOT_CSS } from './live-page-html.ts';
import type { MigrationFigures } from './story-migration.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const RULES = join(REPO, 'deploy', 'prometheus', 'rules', 'rpcscope.rules.yml');
/** As Grafana's $__rate_interval for a 1 s scrape interval. */
const RATE_WINDOW = '4s';
const STEP_S = 1;
/** The protocols and pods modes show at most this much of the run. */
const RANGE_S = 180;

export interface LivePage {
  url: string;
  prometheusUrl: string;
  /** The run's start and the remedy (epoch ms), which the before/after mode compares around. */
  setStart(startMs: number, remedyMs: number): void;
  /** What the page's migration block shows: the split's and the shadow's figures, read from the sidecars when asked. */
  setMigration(source: () => { figures: MigrationFigures; lines: string[] }): void;
  stop(): Promise<void>;
}

/** `prometheus` on PATH (or RPCSCOPE_PROMETHEUS), or undefined. */
export function findPrometheus(): string | undefined {
  const candidates = process.env.RPCSCOPE_PROMETHEUS ? [process.env.RPCSCOPE_PROMETHEUS] : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'prometheus'));
  for (const file of candidates) {
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not this one
    }
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const srv = createNetServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr !== null && typeof addr !== 'string' ? resolvePort(addr.port) : reject(new Error('no port'))));
    });
  });
}

async function startPrometheus(bin: string, targets: Array<{ address: string; labels: Record<string, string> }>): Promise<{ url: string; stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'rpcscope-demo-prom-'));
  const port = await freePort();
  // YAML is a superset of JSON: the config needs no YAML writer. The rules and
  // the target labels are those of deploy/ (namespace, service, pod).
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
    rule_files: [RULES],
    scrape_configs: [{ job_name: 'rpcscope', static_configs: targets.map((t) => ({ targets: [t.address], labels: t.labels })) }],
  };
  await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
  const child = spawn(bin, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const kill = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', kill);
  const stop = async (): Promise<void> => {
    process.off('exit', kill);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(kill, 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode}: ${log}`);
    }
    if (await fetch(`${url}/-/ready`).then((r) => r.ok, () => false)) return { url, stop };
    if (Date.now() > until) {
      await stop();
      throw new Error(`prometheus not ready after 20 s: ${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function queryRange(prometheusUrl: string, q: PanelQuery, from: number, to: number): Promise<{ refId: string; response: unknown; stepSeconds: number }> {
  const res = await fetch(`${prometheusUrl}/api/v1/query_range`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ query: q.expr, start: String(from), end: String(to), step: String(STEP_S) }).toString(),
  });
  return { refId: q.refId, response: await res.json(), stepSeconds: STEP_S };
}

const MODES = ['protocols', 'beforeAfter', 'pods'] as const;
type Mode = (typeof MODES)[number];

/** The panel's options and queries per mode, as a dashboard would give them. */
function modeSpec(mode: Mode, nowS: number, startS: number, remedyS: number): { options: Record<string, unknown>; queries: PanelQuery[]; from: number; to: number } {
  const from = Math.max(startS, nowS - RANGE_S);
  switch (mode) {
    case 'protocols':
      // A minute of demo traffic holds a few hundred calls per pair, not the 500 a production headline waits for.
      return { options: { mode, baseline: 'rest', metrics: ['p50', 'p99', 'rate', 'errors', 'resp_bytes'], minCalls: 50 }, queries: protocolQueries(RATE_WINDOW), from, to: nowS };
    case 'beforeAfter': {
      // The storefront's first stretch (REST) against its latest one (gRPC): equal halves of the run so far.
      const half = Math.max(2, Math.floor((nowS - startS) / 2));
      return { options: { mode, metrics: ['p50', 'p99', 'rate', 'errors', 'resp_bytes'], minCalls: 20 }, queries: beforeAfterQueries(RATE_WINDOW, `${half}s`), from: nowS - half, to: nowS };
    }
    case 'pods':
      // Only the order Service's pods: the back-office caller's outbound sidecar has client connections too.
      return {
        options: { mode, reducer: 'last' },
        queries: podQueries(RATE_WINDOW).map((q) => ({ ...q, expr: q.expr.replaceAll('{side="downstream"}', '{side="downstream", service="orders"}') })),
        from: Math.max(startS, Math.min(from, remedyS - 30)),
        to: nowS,
      };
  }
}

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.map': 'application/json', '.json': 'application/json', '.svg': 'image/svg+xml' };

export async function startLivePage(opts: { targets: Array<{ address: string; labels: Record<string, string> }>; log: (line: string) => void }): Promise<LivePage | { missing: string }> {
  const bin = findPrometheus();
  if (bin === undefined) {
    return { missing: 'no panel page: it needs `prometheus` on PATH (Debian: apt-get install prometheus) to record the sidecars; going on with the terminal view' };
  }
  // Ready before the story starts: esbuild takes both cores while it builds,
  // which would starve the story's traffic (measured: most calls missing
  // their deadlines); after the first run it comes from the cache at once.
  const building = (): void => opts.log('building the panel page\'s bundle of @grafana/ui before the traffic starts (this once, 15 s to a minute; then cached in node_modules/.cache)...');
  const [started, built] = await Promise.allSettled([startPrometheus(bin, opts.targets), buildPlugin().then(() => cachedHarnessBundle(building))]);
  if (built.status === 'rejected') {
    if (started.status === 'fulfilled') await started.value.stop();
    throw new Error(`the panel page cannot load the plugin: ${String(built.reason)}`);
  }
  if (started.status === 'rejected') throw started.reason;
  const prometheus = started.value;
  const bundle = built.value;
  let startS = Date.now() / 1000;
  let remedyS = startS + 30;
  let migration: (() => { figures: MigrationFigures; lines: string[] }) | undefined;

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, type: string, body: string | Buffer): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    };
    const fail = (err: unknown): void => send(500, 'text/plain', String(err));
    if (url.pathname === '/') return send(200, 'text/html; charset=utf-8', LIVE_PAGE(prometheus.url));
    if (url.pathname === '/panel') return send(200, 'text/html; charset=utf-8', PANEL_PAGE);
    if (url.pathname === '/harness.js') return send(200, 'text/javascript', bundle);
    if (url.pathname === '/api/migration') return send(200, 'application/json', JSON.stringify(migration?.() ?? null));
    if (url.pathname === '/uPlot.min.css') return void readFile(UPLOT_CSS()).then((css) => send(200, 'text/css', css), fail);
    if (url.pathname === '/api/spec') {
      const mode = url.searchParams.get('mode') as Mode;
      if (!MODES.includes(mode)) return send(400, 'text/plain', `mode: one of ${MODES.join(', ')}`);
      const nowS = Math.floor(Date.now() / 1000);
      const spec = modeSpec(mode, nowS, Math.floor(startS), Math.floor(remedyS));
      return void Promise.all(spec.queries.map((q) => queryRange(prometheus.url, q, spec.from, spec.to))).then(
        (queries) => send(200, 'application/json', JSON.stringify({ theme: 'dark', options: spec.options, queries, from: spec.from, to: spec.to })),
        fail,
      );
    }
    if (url.pathname.startsWith('/plugin/')) {
      const file = normalize(join(DIST_DIR, url.pathname.slice('/plugin/'.length)));
      if (!file.startsWith(DIST_DIR)) return send(403, 'text/plain', 'forbidden');
      return void readFile(file).then((body) => send(200, TYPES[extname(file)] ?? 'application/octet-stream', body), () => send(404, 'text/plain', 'not found'));
    }
    send(404, 'text/plain', 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/`;
  opts.log(`Prometheus ${prometheus.url} scrapes the sidecars with deploy/prometheus's rules; the panel page: ${url}`);
  return {
    url,
    prometheusUrl: prometheus.url,
    setStart(startMs, remedyMs) {
      startS = startMs / 1000;
      remedyS = remedyMs / 1000;
    },
    setMigration(source) {
      migration = source;
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await prometheus.stop();
    },
  };
}
