// The fleet, simulated: N pods' sidecar expositions scraped by one real
// Prometheus (Debian's /usr/bin/prometheus) on this machine, with the recording
// and alerting rules of deploy/prometheus loaded. Each pod is its own loopback
// listener (test/fleet/simulated-fleet.ts) with pod, namespace and service
// target labels, as kubernetes_sd would attach them, serving the exposition
// the sidecar's metrics observer renders for the series-budget workload (100
// gRPC methods x 3 codes + 20 REST routes) at the chosen detail level, its
// counters growing. Prints active series, samples per second, memory, scrape
// duration and each rule group's evaluation time against its interval;
// asserts nothing (test/fleet/rules-at-scale.test.ts does).
//   node --import tsx test/fleet/series-fleet.ts [--pods 1000] [--detail standard] [--rounds 4] [--interval 30]
import { parseArgs } from 'node:util';
import type { MetricsDetail } from '../../sidecar/src/config/schema.ts';
import { RULES_FILE } from './fleet.ts';
import { ruleGroups, sleep, startFleetPrometheus, startSimulatedFleet } from './simulated-fleet.ts';

const { values: args } = parseArgs({
  options: {
    pods: { type: 'string', default: '1000' },
    detail: { type: 'string', default: 'standard' },
    rounds: { type: 'string', default: '4' },
    interval: { type: 'string', default: '30' },
  },
});
const pods = Number(args.pods);
const detail = args.detail as MetricsDetail;
const intervalS = Number(args.interval);

const fleet = await startSimulatedFleet({ pods, detail });
const prom = await startFleetPrometheus('series-fleet', {
  global: { scrape_interval: `${intervalS}s`, scrape_timeout: `${Math.max(1, intervalS - 1)}s`, evaluation_interval: `${intervalS}s` },
  rule_files: [RULES_FILE],
  scrape_configs: [{ job_name: 'rpcscope', static_configs: fleet.staticConfigs() }],
});
const value = async (expr: string): Promise<number> => Number((await prom.query(expr))[0]?.value[1] ?? NaN);

const started = Date.now();
// On a busy machine the first round takes longer than one interval: wait until every target has
// been scraped once (or 15 minutes), then for the rounds asked for, noting each rule group's
// longest evaluation over them.
while (((await value('count(up == 1)')) || 0) < pods && Date.now() - started < 900_000) await sleep(2000);
const allUp = Math.round((Date.now() - started) / 1000);
const longest = new Map<string, { ms: number; interval: number; missed: number }>();
const until = Date.now() + Number(args.rounds) * intervalS * 1000;
while (Date.now() < until) {
  for (const [name, g] of ruleGroups(await prom.own())) {
    const l = longest.get(name) ?? { ms: 0, interval: g.interval, missed: 0 };
    longest.set(name, { ms: Math.max(l.ms, Math.round(g.lastDuration * 1000)), interval: g.interval, missed: g.missed });
  }
  await sleep(2000);
}

const targets = (await (await fetch(`${prom.url}/api/v1/targets?state=active`)).json()) as { data: { activeTargets: { health: string; lastError: string }[] } };
const errors = new Map<string, number>();
for (const t of targets.data.activeTargets) if (t.health !== 'up') errors.set(t.lastError || t.health, (errors.get(t.lastError || t.health) ?? 0) + 1);
const m = await prom.own();
const pick = (name: string): number => m.get(name) ?? NaN;
const samplesPerRound = await value('sum(scrape_samples_scraped{job="rpcscope"})');
const figures = {
  pods,
  detail,
  interval_s: intervalS,
  series_per_pod: fleet.seriesPerPod,
  bytes_per_scrape: fleet.bytesPerScrape,
  up: await value('sum(up)'),
  head_series: pick('prometheus_tsdb_head_series'),
  samples_per_round: samplesPerRound,
  samples_per_s: Math.round(samplesPerRound / intervalS),
  rss_mib: Math.round(pick('process_resident_memory_bytes') / 2 ** 20),
  heap_inuse_mib: Math.round(pick('go_memstats_heap_inuse_bytes') / 2 ** 20),
  scrape_duration_avg_ms: Math.round((await value('avg(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  scrape_duration_max_ms: Math.round((await value('max(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  // Longest evaluation seen over the rounds, and its share of the group's interval (the target is at most 10 %).
  rule_groups: Object.fromEntries([...longest].map(([k, v]) => [k, `${v.ms} ms (${((v.ms / 10 / v.interval)).toFixed(1)} % of ${v.interval} s), ${v.missed} iterations missed`])),
  scrape_errors: Object.fromEntries(errors),
  all_up_after_s: allUp,
  ran_s: Math.round((Date.now() - started) / 1000),
};
console.log(JSON.stringify(figures, null, 2));
await prom.stop();
await fleet.stop();
