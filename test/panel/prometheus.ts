// A real Prometheus (Debian's /usr/bin/prometheus) on a free port, with a generated config and
// its own TSDB directory, and the HTTP API calls the panel tests make. Generic: nothing here
// knows about the panel.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const PROMETHEUS_BIN = process.env.RPCSCOPE_PROMETHEUS ?? '/usr/bin/prometheus';

export interface PrometheusTarget {
  /** host:port serving the exposition. */
  address: string;
  metricsPath?: string;
  /** Target labels, as service discovery attaches them (pod, namespace…). */
  labels?: Record<string, string>;
}

export interface PrometheusProcess {
  url: string;
  stop(): Promise<void>;
}

/** The answer of /api/v1/query_range (or /api/v1/query), as Prometheus sends it. */
export interface PromApiResponse {
  status: 'success' | 'error';
  data:
    | { resultType: 'matrix'; result: Array<{ metric: Record<string, string>; values: Array<[number, string]> }> }
    | { resultType: 'vector'; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  error?: string;
  errorType?: string;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('no port'));
        return;
      }
      srv.close(() => resolve(addr.port));
    });
  });
}

export async function startPrometheus(targets: PrometheusTarget[], scrapeInterval = '1s'): Promise<PrometheusProcess> {
  const dir = await mkdtemp(join(tmpdir(), 'rpcscope-panel-prom-'));
  const port = await freePort();
  // JSON is YAML, so the config needs no YAML writer. One job per metrics path, since
  // static_configs share their job's path.
  const byPath = new Map<string, PrometheusTarget[]>();
  for (const t of targets) {
    const path = t.metricsPath ?? '/metrics';
    byPath.set(path, [...(byPath.get(path) ?? []), t]);
  }
  const config = {
    global: { scrape_interval: scrapeInterval, scrape_timeout: '900ms', evaluation_interval: scrapeInterval },
    scrape_configs: [...byPath.entries()].map(([path, list], i) => ({
      job_name: `rpcscope-${i}`,
      metrics_path: path,
      static_configs: list.map((t) => ({ targets: [t.address], labels: t.labels ?? {} })),
    })),
  };
  const configFile = join(dir, 'prometheus.yml');
  await writeFile(configFile, JSON.stringify(config, null, 2));

  const child = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] }
  );
  let log = '';
  child.stderr.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`prometheus exited with ${child.exitCode}:\n${log}`);
    }
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false
    );
    if (ready) {
      return { url, stop };
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`prometheus not ready after 20 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function api(url: string, path: string, params: Record<string, string>): Promise<PromApiResponse> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  const body = (await res.json()) as PromApiResponse;
  if (body.status !== 'success') {
    throw new Error(`prometheus ${path} ${params.query}: ${body.errorType ?? res.status}: ${body.error ?? ''}`);
  }
  return body;
}

/** /api/v1/query_range; times in Unix seconds. The whole answer, as a data source receives it. */
export function queryRange(url: string, query: string, start: number, end: number, stepSeconds: number): Promise<PromApiResponse> {
  return api(url, '/api/v1/query_range', { query, start: String(start), end: String(end), step: String(stepSeconds) });
}

export function queryInstant(url: string, query: string, time?: number): Promise<PromApiResponse> {
  return api(url, '/api/v1/query', time === undefined ? { query } : { query, time: String(time) });
}

/** Polls until every series of an instant query has a sample at or after `sinceSeconds`. */
export async function waitForSample(url: string, query: string, sinceSeconds: number, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await queryInstant(url, `timestamp(${query})`);
    const times = r.data.resultType === 'vector' ? r.data.result.map((s) => Number(s.value[1])) : [];
    if (times.length > 0 && Math.min(...times) >= sinceSeconds) {
      return;
    }
    if (Date.now() > until) {
      throw new Error(`no sample of ${query} at or after ${sinceSeconds} within ${timeoutMs} ms`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}
