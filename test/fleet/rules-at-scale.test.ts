// The rules of deploy/prometheus on a fleet: one real Prometheus scraping N
// simulated sidecars (100 gRPC methods x 3 codes + 20 REST routes each, every
// other method's calls mostly with a deadline, at the default detail
// `standard`) evaluates every rpcscope rule group within 10 % of its interval
// (prometheus_rule_group_last_duration_seconds, the largest seen over several
// evaluations), and the rules answer for every service: the skew, the
// missing-deadline ratio per method, the deadline-miss ratio.
//
// Size: RPCSCOPE_FLEET_PODS (default 50, what `npm test` runs on its shared
// 2-core machine; 1,000 is the fleet deploy/README.md's sizing table reports,
// with the figures of `node --import tsx test/fleet/series-fleet.ts --pods
// 1000`), scrape and evaluation interval RPCSCOPE_FLEET_INTERVAL seconds
// (default 30, as deploy/README.md advises for fleets).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { RULES_FILE } from './fleet.ts';
import { SERVICES, podFactor, workloadExposition, ruleGroups, sleep, startFleetPrometheus, startSimulatedFleet, waitForCount, type FleetPrometheus, type SimulatedFleet, type Workload } from './simulated-fleet.ts';

const PODS = Number(process.env.RPCSCOPE_FLEET_PODS ?? 50);
const INTERVAL = Number(process.env.RPCSCOPE_FLEET_INTERVAL ?? 30);
/** What every simulated sidecar has served: the series-budget workload, deadlines on every other method. */
const WORKLOAD: Workload = { deadlines: true };
const GROUPS = ['rpcscope.pod', 'rpcscope.recording', 'rpcscope.recording.methods', 'rpcscope.recording.long', 'rpcscope.alerts', 'rpcscope.alerts.long'];

/** The groups the rules file runs on their own interval (the rest run at the global one). */
const INTERVALS = new Map(
  (parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; interval?: string }[] }).groups.flatMap((g) => (g.interval ? [[g.name, Number(/^(\d+)m$/.exec(g.interval)?.[1]) * 60] as const] : [])),
);

let fleet: SimulatedFleet;
let prom: FleetPrometheus;
/** Seconds the evaluations were watched for, ending when before() ends. */
let watchedSeconds = 0;
/** Per group: the longest evaluation seen, its interval, the iterations missed while watched. */
const seen = new Map<string, { longest: number; interval: number; missed: number; evaluations: number }>();

describe(`rules at scale: ${PODS} pods x 100 methods at standard, deadlines on half, ${INTERVAL} s interval`, { timeout: 30 * 60_000 }, () => {
  before(async () => {
    fleet = await startSimulatedFleet({ pods: PODS, detail: 'standard', ...WORKLOAD });
    prom = await startFleetPrometheus('rules-at-scale', {
      global: { scrape_interval: `${INTERVAL}s`, scrape_timeout: `${INTERVAL - 1}s`, evaluation_interval: `${INTERVAL}s` },
      rule_files: [RULES_FILE],
      scrape_configs: [{ job_name: 'rpcscope', static_configs: fleet.staticConfigs() }],
    });
    const upAfter = await waitForCount(prom, 'count(up{job="rpcscope"} == 1)', PODS, 20 * 60_000);
    // The 5-minute figures need two scrapes; the 30-minute ones one 5-minute recording.
    const services = Math.min(PODS, SERVICES);
    await waitForCount(prom, 'count(namespace_service_protocol:rpcscope_calls_total:server_error_ratio5m)', services, 5 * 60_000);
    await waitForCount(prom, 'count(count by (namespace, service) (namespace_service_method:rpcscope_calls_without_deadline_total:ratio30m))', services, 5 * 60_000);
    await waitForCount(prom, 'count(namespace_service:rpcscope_calls_total:pod_skew2m)', services, 5 * 60_000);
    // Then watch every evaluation of the next few intervals.
    const first = ruleGroups(await prom.own());
    // At least two evaluations of every group, the long ones (every minute) included.
    const watchStart = Date.now();
    const until = watchStart + Math.max(4 * INTERVAL, 130) * 1000;
    const lastSeen = new Map<string, number>();
    while (Date.now() < until) {
      const own = await prom.own();
      for (const [name, g] of ruleGroups(own)) {
        const s = seen.get(name) ?? { longest: 0, interval: g.interval, missed: 0, evaluations: 0 };
        s.longest = Math.max(s.longest, g.lastDuration);
        s.missed = g.missed - (first.get(name)?.missed ?? 0);
        const evaluated = own.get(`prometheus_rule_group_last_evaluation_timestamp_seconds{rule_group="${RULES_FILE};${name}"}`) ?? 0;
        if (evaluated !== lastSeen.get(name)) s.evaluations++;
        lastSeen.set(name, evaluated);
        seen.set(name, s);
      }
      await sleep(Math.min(2000, (INTERVAL * 1000) / 4));
    }
    watchedSeconds = Math.floor((Date.now() - watchStart) / 1000);
    const figures = Object.fromEntries([...seen].map(([k, v]) => [k, `${(v.longest * 1000).toFixed(0)} ms longest of ${v.evaluations}, ${v.missed} missed, interval ${v.interval} s`]));
    console.log(JSON.stringify({ pods: PODS, interval_s: INTERVAL, series_per_pod: fleet.seriesPerPod, all_up_after_s: Math.round(upAfter), rule_groups: figures }, null, 2));
  });

  after(async () => {
    await prom?.stop();
    await fleet?.stop();
  });

  it('evaluates every rpcscope rule group in at most 10 % of its interval, missing no iteration', () => {
    assert.deepEqual([...seen.keys()].sort(), [...GROUPS].sort());
    for (const [name, g] of seen) {
      assert.equal(g.interval, INTERVALS.get(name) ?? INTERVAL, name);
      assert.ok(g.evaluations >= 2, `${name}: ${g.evaluations} evaluations watched`);
      assert.ok(g.longest <= 0.1 * g.interval, `${name} took ${(g.longest * 1000).toFixed(0)} ms of its ${g.interval} s interval`);
      assert.equal(g.missed, 0, `${name} missed ${g.missed} iterations`);
    }
  });

  it('answers for every service: the cross-pod skew of the simulated load and the 30-minute missing-deadline ratio per method', async () => {
    const skews = await prom.query('namespace_service:rpcscope_calls_total:pod_skew2m');
    const services = Array.from({ length: Math.min(PODS, SERVICES) }, (_, k) => `svc-${k}`);
    const withSkew = new Set(skews.map((s) => s.metric.service));
    assert.deepEqual(services.filter((s) => !withSkew.has(s)), [], 'services without a skew at the last evaluation');
    for (const s of skews) {
      // Service svc-k has pods k, k+100, ...; each pod's calls grow at podFactor times the base rate.
      const k = Number(s.metric.service?.replace('svc-', ''));
      const factors = Array.from({ length: PODS }, (_, i) => i).filter((i) => i % SERVICES === k).map((i) => podFactor(i));
      const want = Math.max(...factors) / (factors.reduce((a, b) => a + b, 0) / factors.length);
      assert.ok(Math.abs(Number(s.value[1]) - want) < 1e-6, `${s.metric.service}: skew ${s.value[1]}, want ${want}`);
    }
    // And at every evaluation watched, not only the last: a pod whose rate a late scrape left out
    // reads as idle, and its service's skew drops out (or, with other pods, jumps) until the next one.
    const fewest = await prom.query(`min_over_time(count(namespace_service:rpcscope_calls_total:pod_skew2m)[${watchedSeconds}s:5s])`);
    assert.equal(Number(fewest[0]?.value[1]), Math.min(PODS, SERVICES), `the fewest services with a skew at one instant of the last ${watchedSeconds} s`);
    const ratios = await prom.query('namespace_service_method:rpcscope_calls_without_deadline_total:ratio30m');
    const perService = new Map<string, number>();
    for (const r of ratios) perService.set(r.metric.service ?? '', (perService.get(r.metric.service ?? '') ?? 0) + 1);
    assert.deepEqual(services.filter((s) => (perService.get(s) ?? 0) < 100), [], `services with fewer than 100 per-method ratios (${ratios.length} in all)`);
    // On every other method two calls in three carry a deadline (the calls without a deadline
    // plus those with one, added); on the rest none does (the calls without a deadline alone).
    for (const r of ratios) {
      const i = Number(/GetItem(\d+)$/.exec(r.metric.method ?? '')?.[1]);
      assert.ok(Math.abs(Number(r.value[1]) - (i % 2 === 0 ? 1 / 3 : 1)) < 1e-9, JSON.stringify(r));
    }
  });

  it('answers the deadline-miss ratio of every service as the sidecars\' own histograms give it', async () => {
    // What each simulated sidecar exports: calls with a deadline, and those that ended within it.
    const lines = workloadExposition('standard', WORKLOAD).split('\n');
    const total = (re: RegExp): number => lines.filter((l) => re.test(l)).reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
    const want = 1 - total(/^rpcscope_deadline_used_ratio_bucket\{.*le="1"/) / total(/^rpcscope_deadline_used_ratio_count\{/);
    assert.ok(want > 0 && want < 1, `the workload misses ${want} of its deadlines`);
    const misses = await prom.query('namespace_service_protocol:rpcscope_deadline_used_ratio:miss_ratio5m');
    assert.equal(misses.length, Math.min(PODS, SERVICES), JSON.stringify(misses.slice(0, 3)));
    for (const m of misses) assert.ok(Math.abs(Number(m.value[1]) - want) < 1e-9, `${JSON.stringify(m)}: want ${want}`);
  });
});
