// deploy/prometheus/sharded with real binaries: three Prometheus agents
// (`--enable-feature=agent`, agent-0/1/2.yml) over simulated sidecars, each
// keeping its `hashmod` share of the pods and remote-writing to a Prometheus
// remote-write receiver (`--web.enable-remote-write-receiver`, store.yml, the
// rpcscope rules loaded), beside one Prometheus scraping every pod with
// scrape-kubernetes.yml and the same rules. Every pod's series arrive exactly
// once; the rules, the dashboards' queries and the panel's queries answer the
// same from the receiver as from the single Prometheus.
//
// Debian's Prometheus has no Kubernetes discovery, so the shipped jobs get
// their pods through file_sd with the labels the pod role would attach; the
// relabelling (the sidecar's admin port, namespace/service/pod, the shard) is
// the shipped one. Size: RPCSCOPE_SHARD_PODS (default 40, four a service, what
// `npm test` runs: five Prometheus processes share the test machine),
// interval RPCSCOPE_FLEET_INTERVAL seconds (default 15), gRPC methods a pod
// RPCSCOPE_SHARD_METHODS (default the workload's 100). Sharding splits
// targets, not series: 1,000 pods at 10 methods (641 series each) test it at
// fleet size in memory this machine has, where 1,000 pods at 100 methods
// would hold 2.4 M series in each of the receiver and the single Prometheus
// (deploy/README.md, "Remote-write queue for 1,000 pods").
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { REPO_ROOT } from '../deploy/metrics-contract.ts';
import { dashboardExpressions, metricNames, substitute } from '../deploy/promql.ts';
import type { PromSample } from '../support/prometheus.ts';
import { podLabels, sleep, startFleetPrometheus, startSimulatedFleet, waitForCount, type FleetPrometheus, type SimulatedFleet } from './simulated-fleet.ts';

const PODS = Number(process.env.RPCSCOPE_SHARD_PODS ?? 40);
/** Four pods a service, so that a service's pods are spread over the agents and only the store sees them all. */
const SERVICES = Math.ceil(PODS / 4);
const INTERVAL = Number(process.env.RPCSCOPE_FLEET_INTERVAL ?? 15);
const METHODS = Number(process.env.RPCSCOPE_SHARD_METHODS ?? 100);
if (!Number.isInteger(METHODS) || METHODS < 1 || METHODS > 100) throw new Error(`RPCSCOPE_SHARD_METHODS: a whole number from 1 to 100, not ${process.env.RPCSCOPE_SHARD_METHODS}`);
const PROM_DIR = join(REPO_ROOT, 'deploy', 'prometheus');
const SHARDED = join(PROM_DIR, 'sharded');
const AGENT_FILES = readdirSync(SHARDED).filter((f) => /^agent-\d+\.yml$/.test(f)).sort();

interface ScrapeJob { job_name: string; kubernetes_sd_configs?: unknown; relabel_configs: Record<string, unknown>[]; [k: string]: unknown }
interface PromConfig { global?: Record<string, unknown>; rule_files?: string[]; scrape_configs?: ScrapeJob[]; remote_write?: { url: string; [k: string]: unknown }[]; [k: string]: unknown }

const readConfig = (file: string): PromConfig => parse(readFileSync(file, 'utf8')) as PromConfig;

let fleet: SimulatedFleet;
let dir: string;
let single: FleetPrometheus;
let receiver: FleetPrometheus;
const agents: FleetPrometheus[] = [];
/** When both had every pod and 5-minute windows full of data (unix seconds, a little in the past). */
let at = 0;

/** A sample's identity: its labels but the shard that scraped it, sorted. */
function key(metric: Record<string, string>): string {
  return JSON.stringify(Object.entries(metric).filter(([k]) => k !== 'prometheus_shard').sort(([a], [b]) => a.localeCompare(b)));
}

function byKey(samples: PromSample[]): Map<string, number> {
  return new Map(samples.map((s) => [key(s.metric), Number(s.value[1])]));
}

/** Differences between two answers: labels on one side only, or values further apart than float rounding. */
function differences(a: Map<string, number>, b: Map<string, number>): string[] {
  const out: string[] = [];
  for (const [k, v] of a) {
    const w = b.get(k);
    if (w === undefined) out.push(`only from one Prometheus: ${k}`);
    else if (!(Math.abs(v - w) <= 1e-9 + 1e-6 * Math.max(Math.abs(v), Math.abs(w))) && !(Number.isNaN(v) && Number.isNaN(w))) out.push(`${k}: ${v} vs ${w}`);
  }
  for (const k of b.keys()) if (!a.has(k)) out.push(`only from the receiver: ${k}`);
  return out;
}

/** Prometheus's hashmod: the last 8 bytes of the MD5 of the source label values, big-endian, modulo. */
function hashmod(value: string, modulus: number): number {
  return Number(createHash('md5').update(value).digest().readBigUInt64BE(8) % BigInt(modulus));
}

/** The shipped job, with its pods from a file_sd file instead of the Kubernetes API. */
function fileSdJob(job: ScrapeJob, sdFile: string): ScrapeJob {
  const { kubernetes_sd_configs: k8s, ...rest } = job;
  assert.ok(k8s, `${job.job_name} discovers pods through kubernetes_sd_configs`);
  return { ...rest, file_sd_configs: [{ files: [sdFile], refresh_interval: '5s' }] };
}

const intervals = { scrape_interval: `${INTERVAL}s`, scrape_timeout: `${INTERVAL - 1}s`, evaluation_interval: `${INTERVAL}s` };

describe(`sharded scraping and remote-write: ${AGENT_FILES.length} agents over ${PODS} pods x ${METHODS} methods`, { timeout: 30 * 60_000 }, () => {
  before(async () => {
    fleet = await startSimulatedFleet({ pods: PODS, detail: 'standard', services: SERVICES, methods: METHODS });
    dir = mkdtempSync(join(tmpdir(), 'rpcscope-sharded-'));
    // The labels the pod role would give each pod's admin port.
    const sdFile = join(dir, 'pods.json');
    writeFileSync(
      sdFile,
      JSON.stringify(
        Array.from({ length: PODS }, (_, i) => {
          const { namespace, service, pod } = podLabels(i, SERVICES);
          return {
            targets: [fleet.address(i)],
            labels: {
              __meta_kubernetes_namespace: namespace,
              __meta_kubernetes_pod_name: pod,
              __meta_kubernetes_pod_label_app_kubernetes_io_name: service,
              __meta_kubernetes_pod_label_rpcscope_dev_sidecar: 'inbound',
              __meta_kubernetes_pod_container_name: 'rpcscope',
              __meta_kubernetes_pod_container_port_name: 'rpcscope-admin',
            },
          };
        }),
      ),
    );
    const store = readConfig(join(SHARDED, 'store.yml'));
    receiver = await startFleetPrometheus('receiver', { ...store, global: { ...store.global, evaluation_interval: `${INTERVAL}s` }, rule_files: (store.rule_files ?? []).map((f) => resolve(SHARDED, f)) }, [
      '--web.enable-remote-write-receiver',
    ]);
    for (const file of AGENT_FILES) {
      const agent = readConfig(join(SHARDED, file));
      const remote = agent.remote_write ?? [];
      assert.equal(remote.length, 1, `${file} writes to one store`);
      agents.push(
        await startFleetPrometheus(file.replace('.yml', ''), {
          ...agent,
          global: { ...agent.global, scrape_interval: intervals.scrape_interval, scrape_timeout: intervals.scrape_timeout },
          scrape_configs: (agent.scrape_configs ?? []).map((j) => fileSdJob(j, sdFile)),
          remote_write: remote.map((r) => ({ ...r, url: `${receiver.url}/api/v1/write` })),
        }, ['--enable-feature=agent']),
      );
    }
    const one = readConfig(join(PROM_DIR, 'scrape-kubernetes.yml'));
    single = await startFleetPrometheus('single', {
      ...one,
      global: { ...one.global, ...intervals },
      rule_files: (one.rule_files ?? []).map((f) => resolve(PROM_DIR, f)),
      scrape_configs: (one.scrape_configs ?? []).map((j) => fileSdJob(j, sdFile)),
    });
    await waitForCount(single, 'count(up{job="rpcscope"} == 1)', PODS, 15 * 60_000);
    await waitForCount(receiver, 'count(up{job="rpcscope"} == 1)', PODS, 15 * 60_000);
    // Five minutes of data behind the 5-minute rules, and one more interval for them to be evaluated over it.
    const t0 = Date.now();
    await sleep(5 * 60_000 + 3 * INTERVAL * 1000);
    at = Date.now() / 1000 - 2 * INTERVAL;
    // What the agents report about their remote-write queues, for deploy/README.md's sizing table.
    const figures: Record<string, unknown> = { pods: PODS, methods: METHODS, series_per_pod: fleet.seriesPerPod, interval_s: INTERVAL, agents: AGENT_FILES.length };
    for (const [i, a] of agents.entries()) {
      const own = await a.own();
      const sum = (name: string): number => [...own].filter(([k]) => k === name || k.startsWith(`${name}{`)).reduce((n, [, v]) => n + v, 0);
      figures[AGENT_FILES[i] ?? String(i)] = {
        samples_sent: sum('prometheus_remote_storage_samples_total'),
        samples_per_s: Math.round(sum('prometheus_remote_storage_samples_total') / ((Date.now() - t0) / 1000 + 60)),
        failed: sum('prometheus_remote_storage_samples_failed_total'),
        retried: sum('prometheus_remote_storage_samples_retried_total'),
        pending: sum('prometheus_remote_storage_samples_pending'),
        shards: sum('prometheus_remote_storage_shards'),
        lag_s: sum('prometheus_remote_storage_highest_timestamp_in_seconds') - sum('prometheus_remote_storage_queue_highest_sent_timestamp_seconds'),
        batch_ms: Math.round((sum('prometheus_remote_storage_sent_batch_duration_seconds_sum') / sum('prometheus_remote_storage_sent_batch_duration_seconds_count')) * 1000),
        rss_mib: Math.round(sum('process_resident_memory_bytes') / 2 ** 20),
      };
    }
    const rown = await receiver.own();
    figures.receiver_rss_mib = Math.round((rown.get('process_resident_memory_bytes') ?? NaN) / 2 ** 20);
    figures.single_rss_mib = Math.round(((await single.own()).get('process_resident_memory_bytes') ?? NaN) / 2 ** 20);
    console.log(JSON.stringify(figures, null, 2));
  });

  after(async () => {
    for (const a of agents) await a.stop();
    await receiver?.stop();
    await single?.stop();
    await fleet?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('ships agents that differ only in their shard, each with the single job\'s relabelling plus hashmod', () => {
    assert.ok(AGENT_FILES.length >= 2 && AGENT_FILES.length <= 4, AGENT_FILES.join());
    const one = readConfig(join(PROM_DIR, 'scrape-kubernetes.yml')).scrape_configs?.[0];
    for (const [n, file] of AGENT_FILES.entries()) {
      const text = readFileSync(join(SHARDED, file), 'utf8');
      assert.equal(text.replaceAll(`"${n}"`, '"N"').replace(/^# Shard \d+/, '# Shard N'), readFileSync(join(SHARDED, AGENT_FILES[0] ?? ''), 'utf8').replaceAll('"0"', '"N"').replace(/^# Shard \d+/, '# Shard N'), `${file} differs from agent-0.yml in more than its shard`);
      const job = readConfig(join(SHARDED, file)).scrape_configs?.[0];
      const sharding = job?.relabel_configs.slice(-2);
      assert.deepEqual(job?.relabel_configs.slice(0, -2), one?.relabel_configs, `${file}: the single Prometheus's relabelling first`);
      assert.deepEqual(sharding, [
        { source_labels: ['__address__'], modulus: AGENT_FILES.length, target_label: '__tmp_shard', action: 'hashmod' },
        { source_labels: ['__tmp_shard'], regex: String(n), action: 'keep' },
      ]);
    }
  });

  it('delivers every pod\'s series to the receiver exactly once, each pod from the one agent its hashmod names', async () => {
    const want = Array.from({ length: PODS }, (_, i) => podLabels(i, SERVICES).pod).sort();
    const up = await receiver.query('count by (pod) (up{job="rpcscope"})', at);
    assert.deepEqual(up.map((s) => s.metric.pod).sort(), want);
    for (const s of up) assert.equal(s.value[1], '1', `${s.metric.pod} has ${s.value[1]} up series`);
    // Which agent scraped each pod: one shard per pod, the one hashmod of its address picks.
    const shards = await receiver.query('group by (pod, prometheus_shard) ({job="rpcscope"})', at);
    assert.equal(shards.length, PODS, 'a pod\'s series carry more than one shard');
    const address = new Map(Array.from({ length: PODS }, (_, i) => [podLabels(i, SERVICES).pod, fleet.address(i)]));
    for (const s of shards) assert.equal(s.metric.prometheus_shard, String(hashmod(address.get(s.metric.pod ?? '') ?? '', AGENT_FILES.length)), s.metric.pod);
    const perShard = new Set(shards.map((s) => s.metric.prometheus_shard));
    assert.equal(perShard.size, AGENT_FILES.length, 'every agent scrapes some pods');
    // The point of the store: some service has pods on more than one agent.
    const spread = await receiver.query('count by (namespace, service) (count by (namespace, service, prometheus_shard) (up{job="rpcscope"})) > 1', at);
    assert.ok(spread.length > 0, 'no service spans two agents');
    // Every series of every pod: as many on the receiver as on the single Prometheus, which has what each pod serves.
    const synthetic = byKey(await single.query('count by (pod) ({job="rpcscope", __name__=~"up|scrape_.*"})', at));
    const fromSingle = byKey(await single.query('count by (pod) ({job="rpcscope"})', at));
    for (const [k, n] of fromSingle) assert.equal(n - (synthetic.get(k) ?? NaN), fleet.seriesPerPod, k);
    assert.deepEqual(differences(fromSingle, byKey(await receiver.query('count by (pod) ({job="rpcscope"})', at))), []);
  });

  it('loses no sample on the way: no remote-write failure on any agent', async () => {
    for (const a of agents) {
      const own = await a.own();
      const failed = [...own].filter(([k]) => /^prometheus_remote_storage_(samples_failed_total|samples_dropped_total|exemplars_failed_total)/.test(k)).reduce((n, [, v]) => n + v, 0);
      assert.equal(failed, 0, a.url);
      assert.ok([...own].some(([k, v]) => k.startsWith('prometheus_remote_storage_samples_total') && v > 0), `${a.url} sent nothing`);
    }
  });

  it('gives the same answers to the rules from the receiver as from the single Prometheus, and records the same series', async () => {
    const groups = (readConfig(join(PROM_DIR, 'rules', 'rpcscope.rules.yml')) as unknown as { groups: { name: string; rules: { record?: string; expr: string }[] }[] }).groups;
    const recorded = new Set(groups.flatMap((g) => g.rules.flatMap((r) => (r.record ? [r.record] : []))));
    let compared = 0;
    for (const g of groups) {
      for (const r of g.rules) {
        if (!r.record) continue;
        // The receiver evaluates the rules: the same series as the single Prometheus.
        assert.deepEqual([...byKey(await receiver.query(r.record, at)).keys()].sort(), [...byKey(await single.query(r.record, at)).keys()].sort(), r.record);
        // A rule over the sidecars' own series, evaluated at one instant of data both have in full, gives the
        // same values. (A rule over recorded series reads values each Prometheus recorded at its own
        // evaluations, where the receiver, fed seconds late, sometimes lacked a pod's last sample.)
        if (metricNames(r.expr).some((m) => recorded.has(m))) continue;
        const a = byKey(await single.query(r.expr, at));
        assert.deepEqual(differences(a, byKey(await receiver.query(r.expr, at))), [], r.record);
        if (a.size > 0) compared++;
      }
    }
    // Per-pod 2-minute calls, 5-minute calls by method and code, 5-minute calls without a deadline (the simulated sidecars have no resets and, at standard, no deadline histogram).
    assert.ok(compared >= 3, `${compared} rules over raw series had data`);
    // The alerts the rules raise: the same ones, pending or firing.
    const alerts = '{__name__="ALERTS", alertname=~"Rpcscope.*"}';
    const a = byKey(await single.query(`group without (alertstate) (${alerts})`, at));
    assert.ok(a.size > 0, 'the simulated fleet raises no alert');
    assert.deepEqual(differences(a, byKey(await receiver.query(`group without (alertstate) (${alerts})`, at))), []);
  });

  it('answers every dashboard and panel query the same from the receiver as from the single Prometheus', async () => {
    const files = [
      ...readdirSync(join(REPO_ROOT, 'dashboards')).filter((f) => f.endsWith('.json')).map((f) => join(REPO_ROOT, 'dashboards', f)),
      join(REPO_ROOT, 'grafana-plugin', 'provisioning', 'dashboards', 'dashboard.json'),
    ];
    // Grafana's values: every label value (All), the inbound direction, four scrape intervals as $__rate_interval.
    const values = { cluster: '.*', namespace: '.*', service: '.*', pod: '.*', method: '.*', operation: '.*', direction: 'inbound', compare: '1m', __rate_interval: `${4 * INTERVAL}s` };
    let withData = 0;
    const panelData = new Set<string>();
    for (const file of files) {
      for (const e of dashboardExpressions(JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof dashboardExpressions>[0])) {
        const expr = substitute(e.expr, values);
        const a = byKey(await single.query(expr, at));
        const b = byKey(await receiver.query(expr, at));
        // A variable lists label values: the same series, whatever each counter read at its own scrape.
        if (e.where.includes('/ variable ')) assert.deepEqual([...b.keys()].sort(), [...a.keys()].sort(), e.where);
        else assert.deepEqual(differences(a, b), [], e.where);
        if (a.size > 0) {
          withData++;
          if (file.includes('grafana-plugin')) panelData.add(e.where);
        }
      }
    }
    assert.ok(withData >= 20, `${withData} queries had data`);
    assert.ok(panelData.size >= 3, `${panelData.size} panel queries had data`);
  });
});
