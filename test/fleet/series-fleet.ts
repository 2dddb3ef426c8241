// The fleet, simulated: N pods' sidecar expositions scraped by one real
// Prometheus (Debian's /usr/bin/prometheus) on this machine, with the recording
// and alerting rules of deploy/prometheus loaded. Each pod is a path of one
// loopback HTTP server (`__metrics_path__` per target, with pod, namespace and
// service labels, as kubernetes_sd would attach them), serving the exposition
// the sidecar's metrics observer renders for the series-budget workload (100
// gRPC methods × 3 codes + 20 REST routes) at the chosen detail level.
// Prints active series, head memory, scrape duration and rule evaluation time;
// asserts nothing.
//   node --import tsx test/fleet/series-fleet.ts [--pods 1000] [--detail standard] [--rounds 4] [--interval 15]
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { createMetricsObserver } from '../../sidecar/src/observe/metrics-observer.ts';
import type { MetricsDetail } from '../../sidecar/src/observe/metrics-detail.ts';
import { workloadCalls } from '../../sidecar/test/observe/series-workload.ts';
import { REPO_ROOT } from '../deploy/metrics-contract.ts';
import { PROMETHEUS_BIN, freePort } from '../support/prometheus.ts';

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '1000' },
    detail: { type: 'string', default: 'standard' },
    rounds: { type: 'string', default: '4' },
    interval: { type: 'string', default: '15' },
  },
});
const pods = Number(args.pods);
const detail = args.detail as MetricsDetail;
const intervalS = Number(args.interval);

/** What one sidecar serves after the workload: rendered by the observer the sidecar runs. */
function exposition(): string {
  const o = createMetricsObserver({ maxMethods: 100, env: {}, detail });
  for (const call of workloadCalls()) {
    const end = call.endTime;
    o.callStarted(call);
    call.endTime = end;
    o.callEnded(call);
  }
  const text = o.render();
  void o.shutdown();
  return text;
}

const text = exposition();
const body = Buffer.from(text);
const server = createServer((req, res) => {
  if (!/^\/pods\/\d+\/metrics$/.test(req.url ?? '')) return void res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': body.length }).end(body);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;

const dir = await mkdtemp(join(tmpdir(), 'rpcscope-fleet-'));
const port = await freePort();
const config = {
  global: { scrape_interval: `${intervalS}s`, scrape_timeout: `${Math.max(1, intervalS - 1)}s`, evaluation_interval: `${intervalS}s` },
  rule_files: [join(REPO_ROOT, 'deploy/prometheus/rules/rpcscope.rules.yml')],
  scrape_configs: [{
    job_name: 'rpcscope',
    static_configs: Array.from({ length: pods }, (_, i) => ({
      targets: [address],
      // 20 namespaces of 5 services, 10 pods each at 1,000 pods.
      labels: { __metrics_path__: `/pods/${i}/metrics`, namespace: `ns-${i % 20}`, service: `svc-${i % 100}`, pod: `svc-${i % 100}-pod-${Math.floor(i / 100)}` },
    })),
  }],
};
await writeFile(join(dir, 'prometheus.yml'), stringify(config));
const child = spawn(PROMETHEUS_BIN, [
  `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
], { stdio: ['ignore', 'ignore', 'inherit'] });
const stop = (): void => void child.kill('SIGTERM');
process.once('exit', stop);
const url = `http://127.0.0.1:${port}`;

async function query(expr: string): Promise<number> {
  const res = await fetch(`${url}/api/v1/query`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ query: expr }).toString() });
  const json = (await res.json()) as { data?: { result: { value: [number, string] }[] } };
  return Number(json.data?.result[0]?.value[1] ?? NaN);
}

/** Prometheus's own /metrics: what it reports about itself, read directly. */
async function own(): Promise<Map<string, number>> {
  const lines = (await (await fetch(`${url}/metrics`)).text()).split('\n');
  const out = new Map<string, number>();
  for (const l of lines) {
    const m = /^(\S+?)(\{[^}]*\})? (\S+)$/.exec(l);
    if (m) out.set(m[1]! + (m[2] ?? ''), Number(m[3]));
  }
  return out;
}

for (let i = 0; ; i++) {
  try {
    if ((await fetch(`${url}/-/ready`)).ok) break;
  } catch { /* not listening yet */ }
  if (i > 600) throw new Error('prometheus did not start');
  await new Promise((r) => setTimeout(r, 100));
}
const started = Date.now();
// On a busy machine the first round takes longer than one interval: wait until every target has
// been scraped once (or 10 minutes), then for the rounds asked for.
while (((await query('count(up == 1)')) || 0) < pods && Date.now() - started < 600_000) await new Promise((r) => setTimeout(r, 2000));
const allUp = Math.round((Date.now() - started) / 1000);
await new Promise((r) => setTimeout(r, Number(args.rounds) * intervalS * 1000));

const targets = (await (await fetch(`${url}/api/v1/targets?state=active`)).json()) as { data: { activeTargets: { health: string; lastError: string }[] } };
const errors = new Map<string, number>();
for (const t of targets.data.activeTargets) if (t.health !== 'up') errors.set(t.lastError || t.health, (errors.get(t.lastError || t.health) ?? 0) + 1);
const m = await own();
const pick = (name: string): number => m.get(name) ?? NaN;
const ruleDuration = [...m].filter(([k]) => k.startsWith('prometheus_rule_group_last_duration_seconds')).map(([k, v]) => `${/rule_group="[^"]*;([^"]+)"/.exec(k)?.[1] ?? k} ${(v * 1000).toFixed(0)} ms`);
const figures = {
  pods,
  detail,
  series_per_pod: text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length,
  bytes_per_scrape: body.length,
  up: await query('sum(up)'),
  head_series: pick('prometheus_tsdb_head_series'),
  rss_mib: Math.round(pick('process_resident_memory_bytes') / 2 ** 20),
  heap_inuse_mib: Math.round(pick('go_memstats_heap_inuse_bytes') / 2 ** 20),
  scrape_duration_avg_ms: Math.round((await query('avg(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  scrape_duration_max_ms: Math.round((await query('max(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  samples_per_round: await query('sum(scrape_samples_scraped{job="rpcscope"})'),
  rule_groups: ruleDuration,
  rule_iterations_missed: [...m].filter(([k]) => k.startsWith('prometheus_rule_group_iterations_missed_total')).reduce((n, [, v]) => n + v, 0),
  scrape_errors: Object.fromEntries(errors),
  all_up_after_s: allUp,
  ran_s: Math.round((Date.now() - started) / 1000),
};
console.log(JSON.stringify(figures, null, 2));
stop();
// A TSDB with millions of series takes a while to close; it is thrown away anyway.
await Promise.race([new Promise((r) => child.once('exit', r)), new Promise((r) => setTimeout(r, 10_000))]);
child.kill('SIGKILL');
server.close();
await rm(dir, { recursive: true, force: true });
