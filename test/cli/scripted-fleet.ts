// A scripted fleet for the CLI tests: the fleet of test/fleet (the order
// service's pods behind real sidecars and a connection-balancing TCP front)
// scraped by a real Prometheus with deploy/prometheus's rules, the traffic
// each scenario sends tallied as its clients saw it, and `rpcscope diagnose`
// run against that Prometheus.
import { performance } from 'node:perf_hooks';
import type { StoryCall, StoryCaller } from '@rpcscope/demo/story-callers';
import { RULES_FILE, scrapeAdmin, startFleet, type Fleet, type FleetOptions } from '../fleet/fleet.ts';
import { sum } from '../support/metrics-text.ts';
import { startPrometheus, type RunningPrometheus, type ScrapeTarget } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { runCli, type CliRun } from './cli-process.ts';

/** What Prometheus scrapes: each pod's name and admin address. */
export interface ScrapedPods {
  namespace: string;
  service: string;
  pods: Array<{ name: string; adminUrl: string }>;
}

export interface ScriptedFleet {
  fleet: Fleet;
  prometheus: RunningPrometheus;
  stop(): Promise<void>;
}

export interface ScriptedPod extends ScrapedPods {
  sidecar: SidecarProcess;
  prometheus: RunningPrometheus;
  stop(): Promise<void>;
}

/** One pod: the real sidecar with `args` in front of an app started by the test, scraped by Prometheus with the rules. */
export async function startScriptedPod(opts: { namespace: string; service: string; args: string[] }): Promise<ScriptedPod> {
  const name = `${opts.service}-0`;
  const sidecar = await startSidecarProcess(opts.args, { POD_NAME: name, POD_NAMESPACE: opts.namespace });
  try {
    const prometheus = await startPrometheus({ targets: [{ address: new URL(sidecar.adminUrl).host, labels: { namespace: opts.namespace, service: opts.service, pod: name } }], ruleFiles: [RULES_FILE] });
    await scraping(prometheus, 1);
    return { namespace: opts.namespace, service: opts.service, pods: [{ name, adminUrl: sidecar.adminUrl }], sidecar, prometheus, stop: async () => { await prometheus.stop(); await sidecar.stop(); } };
  } catch (err) {
    await sidecar.stop();
    throw err;
  }
}

export async function startScriptedFleet(opts: FleetOptions & { namespace: string; service: string }): Promise<ScriptedFleet> {
  const fleet = await startFleet({ ...opts, prometheus: false });
  try {
    const prometheus = await startPrometheus({ targets: fleetTargets(fleet), ruleFiles: [RULES_FILE] });
    await scraping(prometheus, fleet.pods.length);
    return { fleet, prometheus, stop: async () => { await prometheus.stop(); await fleet.stop(); } };
  } catch (err) {
    await fleet.stop();
    throw err;
  }
}

/**
 * Waits for Prometheus's first scrape of every target: it applies its targets
 * some seconds after it starts, and traffic sent before would reach it only as
 * the first sample of each series, from which no increase can be read.
 */
async function scraping(prometheus: RunningPrometheus, targets: number): Promise<void> {
  await prometheus.waitForData(`count(up == 1) >= ${targets}`, 30_000);
}

export function fleetTargets(fleet: Fleet): ScrapeTarget[] {
  return fleet.pods.map((p) => ({ address: new URL(p.adminUrl).host, labels: { namespace: fleet.namespace, service: fleet.service, pod: p.name } }));
}

/** Polls until Prometheus holds, for every pod, the rpcscope_calls_total its sidecar serves now: one scrape carries every family. */
export async function waitScraped(prometheus: RunningPrometheus, s: ScrapedPods, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    // Read each time: a call the client saw end (a cancelled stream) may reach its sidecar's count a moment later.
    const want = Object.fromEntries(await Promise.all(s.pods.map(async (p) => [p.name, sum(await scrapeAdmin(p.adminUrl), 'rpcscope_calls_total')] as const)));
    const got = Object.fromEntries((await prometheus.query(`sum by (pod) (rpcscope_calls_total{namespace="${s.namespace}",service="${s.service}"})`)).map((r) => [r.metric.pod ?? '', Number(r.value[1])]));
    if (Object.entries(want).every(([pod, v]) => v === 0 || got[pod] === v)) return;
    if (Date.now() > until) throw new Error(`Prometheus did not catch up: has ${JSON.stringify(got)}, the sidecars serve ${JSON.stringify(want)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface DiagnoseRun extends CliRun {
  report: { findings: Array<{ kind: string; severity: string; title: string; figures: Record<string, unknown>; remedy: string[]; runbook: string; queries: string[] }>; exit_status: number };
}

export async function diagnose(prometheus: RunningPrometheus, args: readonly string[]): Promise<DiagnoseRun> {
  const run = await runCli(['diagnose', '--prometheus', prometheus.url, '--format', 'json', ...args]);
  if (run.code === 3 || run.stdout === '') throw new Error(`rpcscope diagnose could not answer (exit ${run.code}): ${run.stderr}`);
  return { ...run, report: JSON.parse(run.stdout) as DiagnoseRun['report'] };
}

export interface Tally {
  calls: number;
  byCode: Record<string, number>;
  byPod: Record<string, number>;
  /** Each call's duration as its client measured it, in seconds, sorted. */
  seconds: number[];
}

/** Sends `n` calls through `caller`, `concurrency` at a time, spread over about `spreadMs`; tallies what the client saw. */
export async function send(caller: StoryCaller, n: number, call: (i: number) => StoryCall, opts: { concurrency?: number; spreadMs?: number } = {}): Promise<Tally> {
  const concurrency = opts.concurrency ?? 4;
  const gap = (opts.spreadMs ?? 0) / n;
  const tally: Tally = { calls: 0, byCode: {}, byPod: {}, seconds: [] };
  const signal = new AbortController().signal;
  let next = 0;
  const begin = Date.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const wait = begin + i * gap - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const t0 = performance.now();
        const outcome = await caller.call(call(i), signal);
        tally.seconds.push((performance.now() - t0) / 1000);
        tally.calls++;
        tally.byCode[outcome.code] = (tally.byCode[outcome.code] ?? 0) + 1;
        tally.byPod[outcome.pod] = (tally.byPod[outcome.pod] ?? 0) + 1;
      }
    }),
  );
  tally.seconds.sort((a, b) => a - b);
  return tally;
}

export const orderId = (i: number): string => `ord-${String((i % 24) + 1).padStart(6, '0')}`;
