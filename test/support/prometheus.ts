// A real Prometheus (Debian's /usr/bin/prometheus) for tests: it scrapes the
// targets it is given every second, evaluates the given rule files every second,
// and answers PromQL over its HTTP API. Each instance has its own port, config
// and TSDB directory, so concurrent test files never share state.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const PROMETHEUS_BIN = process.env.RPCSCOPE_PROMETHEUS ?? '/usr/bin/prometheus';

export interface ScrapeTarget {
  /** host:port of an admin listener serving /metrics. */
  address: string;
  /** Target labels, as service discovery would attach them (namespace, service, pod). */
  labels: Record<string, string>;
  metricsPath?: string;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromSeries {
  metric: Record<string, string>;
  values: [number, string][];
}

export interface PrometheusOptions {
  targets: ScrapeTarget[];
  ruleFiles?: string[];
  /** The job name shared by every target; the rules do not depend on it. */
  job?: string;
  /** Further scrape jobs, as written in a prometheus.yml (for testing relabelling). */
  rawScrapeConfigs?: unknown[];
  /** Feature flags (`--enable-feature=…`), e.g. `exemplar-storage`. */
  features?: string[];
}

export interface PromExemplars {
  seriesLabels: Record<string, string>;
  exemplars: { labels: Record<string, string>; value: string; timestamp: number }[];
}

export interface RunningPrometheus {
  url: string;
  query(expr: string, time?: number): Promise<PromSample[]>;
  queryRange(expr: string, start: number, end: number, stepSeconds: number): Promise<PromSeries[]>;
  /** `/api/v1/query_exemplars` (needs the `exemplar-storage` feature). */
  queryExemplars(expr: string, start: number, end: number): Promise<PromExemplars[]>;
  /** Polls until `expr` returns at least one sample, or throws after `timeoutMs`. */
  waitForData(expr: string, timeoutMs?: number): Promise<PromSample[]>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') return reject(new Error('no port'));
      srv.close(() => resolve(addr.port));
    });
  });
}

interface ApiAnswer<T> {
  status: 'success' | 'error';
  data?: { resultType: string; result: T };
  error?: string;
  errorType?: string;
}

async function api<T>(base: string, path: string, params: Record<string, string>): Promise<T> {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  const body = (await res.json()) as ApiAnswer<T>;
  if (body.status !== 'success' || body.data === undefined) {
    throw new Error(`prometheus ${path} ${JSON.stringify(params)}: ${body.errorType ?? res.status}: ${body.error ?? ''}`);
  }
  return body.data.result;
}

export async function startPrometheus(opts: PrometheusOptions): Promise<RunningPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), 'rpcscope-prom-'));
  const port = await freePort();
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
    rule_files: opts.ruleFiles ?? [],
    scrape_configs: [
      ...(opts.targets.length === 0
        ? []
        : [
            {
              job_name: opts.job ?? 'rpcscope',
              metrics_path: '/metrics',
              static_configs: opts.targets.map((t) => ({ targets: [t.address], labels: t.labels })),
            },
          ]),
      ...(opts.rawScrapeConfigs ?? []),
    ],
  };
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, stringify(config));
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(opts.features ?? []).map((f) => `--enable-feature=${f}`),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  // A test process that ends without calling stop() must not leave Prometheus running.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);

  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode}:\n${log}`);
    }
    try {
      const res = await fetch(`${url}/-/ready`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 20s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  const query = (expr: string, time?: number): Promise<PromSample[]> =>
    api<PromSample[]>(url, '/api/v1/query', time === undefined ? { query: expr } : { query: expr, time: String(time) });
  const queryRange = (expr: string, start: number, end: number, stepSeconds: number): Promise<PromSeries[]> =>
    api<PromSeries[]>(url, '/api/v1/query_range', { query: expr, start: String(start), end: String(end), step: String(stepSeconds) });

  return {
    url,
    query,
    queryRange,
    async queryExemplars(expr, start, end) {
      // Unlike the query endpoints, the answer's data is the list itself.
      const res = await fetch(`${url}/api/v1/query_exemplars`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ query: expr, start: String(start), end: String(end) }).toString(),
      });
      const body = (await res.json()) as { status: string; data?: PromExemplars[]; error?: string };
      if (body.status !== 'success' || body.data === undefined) throw new Error(`prometheus query_exemplars ${expr}: ${res.status}: ${body.error ?? ''}`);
      return body.data;
    },
    async waitForData(expr, timeoutMs = 20_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const result = await query(expr);
        if (result.length > 0) return result;
        if (Date.now() > until) throw new Error(`no data for ${expr} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 250));
      }
    },
    stop,
  };
}
