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
//   node --import tsx test/fleet/series-fleet.ts [--pods 1000] [--detail standard] [--rounds 4] [--interval 30] [--histograms native] [--deadlines]
// --histograms native: the pods serve native histograms (as sidecars with --histograms native) to a
// Prometheus started with --enable-feature=native-histograms, which asks for the protobuf exposition.
// --deadlines: on every other method two calls in three carry a deadline, so the pods also export the two
// deadline histograms the rules read for those methods (as a fleet whose callers set some).
// --rounds counts the intervals watched after the start (all targets up, then two intervals).
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
    histograms: { type: 'string', default: 'classic' },
    deadlines: { type: 'boolean', default: false },
  },
});
if (args.histograms !== 'classic' && args.histograms !== 'native') throw new Error(`--histograms: classic or native, not ${args.histograms}`);
const histograms = args.histograms;
const pods = Number(args.pods);
const detail = args.detail as MetricsDetail;
const intervalS = Number(args.interval);

const deadlines = args.deadlines;
const fleet = await startSimulatedFleet({ pods, detail, histograms, deadlines });
const prom = await startFleetPrometheus('series-fleet', {
  global: { scrape_interval: `${intervalS}s`, scrape_timeout: `${Math.max(1, intervalS - 1)}s`, evaluation_interval: `${intervalS}s` },
  rule_files: [RULES_FILE],
  scrape_configs: [{ job_name: 'rpcscope', static_configs: fleet.staticConfigs() }],
}, histograms === 'native' ? ['--enable-feature=native-histograms'] : []);
const value = async (expr: string): Promise<number> => Number((await prom.query(expr))[0]?.value[1] ?? NaN);

const started = Date.now();
// On a busy machine the first round takes longer than one interval: wait until every target has
// been scraped once (or 15 minutes), then for the rounds asked for, noting each rule group's
// longest evaluation over them.
while (((await value('count(up == 1)')) || 0) < pods && Date.now() - started < 900_000) await sleep(2000);
const allUp = Math.round((Date.now() - started) / 1000);
// Every evaluation of every group, by the time it ran (seconds since start). The first round of
// scrapes creates every series (2.4 M at 1,000 pods), and evaluations meanwhile wait on the index:
// those of the first two intervals after all targets are up are reported apart, as the start.
const evaluations = new Map<string, { at: number; ms: number }[]>();
const intervals = new Map<string, { interval: number; missed: number }>();
const settledAt = allUp + 2 * intervalS;
const until = Date.now() + (2 + Number(args.rounds)) * intervalS * 1000;
while (Date.now() < until) {
  const own = await prom.own();
  for (const [name, g] of ruleGroups(own)) {
    intervals.set(name, { interval: g.interval, missed: g.missed });
    const at = Math.round((own.get(`prometheus_rule_group_last_evaluation_timestamp_seconds{rule_group="${RULES_FILE};${name}"}`) ?? 0) - started / 1000);
    const list = evaluations.get(name) ?? [];
    if (at > 0 && list.at(-1)?.at !== at) list.push({ at, ms: Math.round(g.lastDuration * 1000) });
    evaluations.set(name, list);
  }
  await sleep(2000);
}
const share = (ms: number, interval: number): string => `${(ms / 10 / interval).toFixed(1)} %`;
const longestOf = (list: { ms: number }[]): number => Math.max(0, ...list.map((e) => e.ms));

const targets = (await (await fetch(`${prom.url}/api/v1/targets?state=active`)).json()) as { data: { activeTargets: { health: string; lastError: string }[] } };
const errors = new Map<string, number>();
for (const t of targets.data.activeTargets) if (t.health !== 'up') errors.set(t.lastError || t.health, (errors.get(t.lastError || t.health) ?? 0) + 1);
// The rules that took longest at their group's last evaluation: where a group's time goes.
const rules = (await (await fetch(`${prom.url}/api/v1/rules`)).json()) as { data: { groups: { name: string; rules: { name: string; evaluationTime: number }[] }[] } };
const slowest = rules.data.groups
  .flatMap((g) => g.rules.map((r) => ({ rule: `${g.name}: ${r.name}`, ms: Math.round(r.evaluationTime * 1000) })))
  .sort((a, b) => b.ms - a.ms)
  .slice(0, 6);
const m = await prom.own();
const pick = (name: string): number => m.get(name) ?? NaN;
const samplesPerRound = await value('sum(scrape_samples_scraped{job="rpcscope"})');
const figures = {
  pods,
  detail,
  histograms,
  deadlines,
  interval_s: intervalS,
  // As Prometheus counted them (a native histogram is one).
  series_per_pod: Math.round(samplesPerRound / pods),
  bytes_per_scrape: fleet.bytesPerScrape,
  up: await value('sum(up)'),
  head_series: pick('prometheus_tsdb_head_series'),
  samples_per_round: samplesPerRound,
  samples_per_s: Math.round(samplesPerRound / intervalS),
  rss_mib: Math.round(pick('process_resident_memory_bytes') / 2 ** 20),
  heap_inuse_mib: Math.round(pick('go_memstats_heap_inuse_bytes') / 2 ** 20),
  scrape_duration_avg_ms: Math.round((await value('avg(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  scrape_duration_max_ms: Math.round((await value('max(scrape_duration_seconds{job="rpcscope"})')) * 1000),
  // Longest evaluation seen over the rounds once settled, and its share of the group's interval (the
  // target is at most 10 %); then the longest while the first rounds created the series.
  rule_groups: Object.fromEntries(
    [...intervals].map(([k, { interval, missed }]) => {
      const list = evaluations.get(k) ?? [];
      const settled = list.filter((e) => e.at >= settledAt);
      const start = list.filter((e) => e.at < settledAt);
      const l = longestOf(settled);
      return [k, `${l} ms (${share(l, interval)} of ${interval} s) over ${settled.length} evaluations, ${missed} iterations missed; at the start ${longestOf(start)} ms`];
    }),
  ),
  slowest_rules_last_evaluation: Object.fromEntries(slowest.map((r) => [r.rule, `${r.ms} ms`])),
  scrape_errors: Object.fromEntries(errors),
  all_up_after_s: allUp,
  ran_s: Math.round((Date.now() - started) / 1000),
};
console.log(JSON.stringify(figures, null, 2));
await prom.stop();
await fleet.stop();
