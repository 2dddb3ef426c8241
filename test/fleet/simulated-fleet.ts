// A fleet of N rpcscope sidecars as Prometheus sees it, simulated on loopback:
// each pod is its own HTTP listener (127.0.0.1, its own port, as each pod has
// its own IP in Kubernetes, so that `hashmod` on `__address__` spreads them)
// serving the exposition the sidecar's metrics observer renders for the
// series-budget workload (100 gRPC methods x 3 codes + 20 REST routes; fewer
// methods, or deadlines, on request) at a detail level. Counters grow
// linearly with time, at a rate that differs by pod within a service (1x, 2x,
// 3x, 4x, ...), so that rates, shares and skews
// are non-zero and the same whichever Prometheus scrapes them and when: each
// sample carries its timestamp (ms), and its value is exactly the pod's rate
// times that timestamp. Also: real Prometheus processes (server,
// agent, remote-write receiver) with a given config, and what they report
// about themselves.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createMetricsObserver, type MetricsObserver } from '../../sidecar/src/observe/metrics-observer.ts';
import { Router } from '../../sidecar/src/route/router.ts';
import type { MetricsDetail } from '../../sidecar/src/config/schema.ts';
import { workloadCalls } from '../../sidecar/test/observe/series-workload.ts';
import { PROMETHEUS_BIN, freePort, type PromSample } from '../support/prometheus.ts';
import { PROTOBUF_ACCEPT, decodeFamilies, encodeFamilies, type DecodedFamily, type DecodedMetric } from '../support/prometheus-proto.ts';
import { scrapeBytes } from '../../sidecar/test/observe/scrape.ts';
import { PROTOBUF_CONTENT_TYPE, acceptsProtobuf } from '../../sidecar/src/observe/prometheus-protobuf.ts';

export const SERVICES = 100;
export const NAMESPACES = 20;

/** The target labels of pod `i`, as kubernetes_sd and the PodMonitor attach them: 20 namespaces of 5 services; pods i, i+100, ... of a service. */
export function podLabels(i: number, services = SERVICES): { namespace: string; service: string; pod: string } {
  const s = i % services;
  return { namespace: `ns-${s % NAMESPACES}`, service: `svc-${s}`, pod: `svc-${s}-pod-${Math.floor(i / services)}` };
}

/** How much faster than the base rate pod `i`'s counters grow: 1 to 4 by its rank in its service. */
export const podFactor = (i: number, services = SERVICES): number => 1 + (Math.floor(i / services) % 4);

/** What the simulated pods have served: `methods` gRPC methods (default the workload's 100), some calls with a deadline. */
export interface Workload { methods?: number; deadlines?: boolean }

/** The observer the sidecar runs, after the workload. */
function workloadObserver(detail: MetricsDetail, histograms: 'classic' | 'native', workload: Workload): MetricsObserver {
  const o = createMetricsObserver({ router: new Router({ maxMethods: 100 }), env: {}, detail, histograms });
  for (const call of workloadCalls(workload.methods, { deadlines: workload.deadlines })) {
    const end = call.endTime;
    o.callStarted(call);
    call.endTime = end;
    o.callEnded(call);
  }
  return o;
}

/** What one sidecar serves after the workload, rendered by the observer the sidecar runs. */
export function workloadExposition(detail: MetricsDetail, workload: Workload = {}): string {
  const o = workloadObserver(detail, 'classic', workload);
  const text = o.render();
  void o.shutdown();
  return text;
}

/** What one sidecar with --histograms native serves a scraper that asks for protobuf after the workload. */
export async function workloadProtobuf(detail: MetricsDetail, workload: Workload = {}): Promise<DecodedFamily[]> {
  const o = workloadObserver(detail, 'native', workload);
  const { body } = await scrapeBytes(o, PROTOBUF_ACCEPT);
  void o.shutdown();
  return decodeFamilies(body);
}

/**
 * The protobuf body of a pod whose counters grow `factor` times the base rate,
 * at `ms`: counters as in the text (exact at the sample's timestamp), each
 * histogram's counts (native buckets, zero bucket, count) and sum times a
 * whole multiple that grows by `factor` a second, so that every count stays an
 * integer, as a native histogram's must.
 */
function scaledProtobuf(families: readonly DecodedFamily[], factor: number, ms: number): Buffer {
  const t = (ms - EPOCH_MS) / 1000;
  const k = Math.floor(factor * t);
  const scale = (m: DecodedMetric): DecodedMetric => {
    const h = m.histogram;
    if (h !== undefined) {
      return {
        label: m.label,
        timestampMs: ms,
        histogram: {
          ...h,
          sampleCount: h.sampleCount * k,
          sampleSum: h.sampleSum * k,
          zeroCount: h.zeroCount === undefined ? undefined : h.zeroCount * k,
          bucket: h.bucket.map((b) => ({ upperBound: b.upperBound, cumulativeCount: b.cumulativeCount * k })),
          positiveDelta: h.positiveDelta.map((d) => d * k),
        },
      };
    }
    if (m.counter !== undefined) return { label: m.label, timestampMs: ms, counter: { value: (m.counter.value * factor * t) / 60 } };
    return { ...m, timestampMs: ms };
  };
  return encodeFamilies(families.map((f) => ({ ...f, metric: f.metric.map(scale) })));
}

interface Line {
  /** Everything before the value (`name{labels} `), or the whole line for comments. */
  head: string;
  /** The value after the workload; per second of counter growth for counters. */
  value: number;
  kind: 'comment' | 'gauge' | 'counter';
}

function template(text: string): Line[] {
  const types = new Map<string, string>();
  const out: Line[] = [];
  for (const l of text.split('\n')) {
    if (l === '') continue;
    const t = /^# TYPE (\S+) (\S+)$/.exec(l);
    if (t) types.set(t[1]!, t[2]!);
    if (l.startsWith('#')) {
      out.push({ head: l, value: 0, kind: 'comment' });
      continue;
    }
    const m = /^(([a-zA-Z_:][\w:]*)(\{.*\})?) (\S+)$/.exec(l);
    if (!m) throw new Error(`unexpected exposition line: ${l}`);
    const name = m[2]!;
    const family = types.get(name) ?? types.get(name.replace(/_(bucket|count|sum|total)$/, '')) ?? 'gauge';
    const growing = family === 'counter' || family === 'histogram' || (family === 'summary' && /_(count|sum)$/.test(name));
    // process_start_time_seconds and the like stay as they are.
    out.push({ head: `${m[1]} `, value: Number(m[4]), kind: growing && name !== 'process_start_time_seconds' ? 'counter' : 'gauge' });
  }
  return out;
}

export interface SimulatedFleet {
  pods: number;
  detail: MetricsDetail;
  /** `host:port` of pod `i`. */
  address(i: number): string;
  /** Sample lines of a pod's text exposition (its series, classic histograms counted bucket by bucket). */
  seriesPerPod: number;
  /** Bytes of one pod's scrape: its text, or its protobuf body where it serves native histograms. */
  bytesPerScrape: number;
  /** static_configs for every pod (or the pods `only` keeps), with their target labels. */
  staticConfigs(only?: (i: number) => boolean): { targets: string[]; labels: Record<string, string> }[];
  stop(): Promise<void>;
}

/**
 * The counters' clock: seconds since this far back, so that every counter is
 * well above 0 by the first scrape and rate() never meets its zero point.
 */
const EPOCH_MS = Date.now() - 86_400_000;

/**
 * `services`: how many services the pods are spread over (pod i in service i % services); default 100.
 * `methods`, `deadlines`: what each pod has served (Workload).
 * `histograms: 'native'`: a scraper that asks for protobuf (Prometheus with
 * --enable-feature=native-histograms) gets native histograms, as from sidecars
 * with --histograms native; others get the text.
 */
export async function startSimulatedFleet(opts: { pods: number; detail: MetricsDetail; services?: number; histograms?: 'classic' | 'native' } & Workload): Promise<SimulatedFleet> {
  const services = opts.services ?? SERVICES;
  const text = workloadExposition(opts.detail, opts);
  const native = opts.histograms === 'native' ? await workloadProtobuf(opts.detail, opts) : undefined;
  const protobufBodies = new Map<number, { at: number; body: Buffer }>();
  const lines = template(text);
  // Rendered at each scrape: the value is exact at the sample's own timestamp (ms), so rate() over
  // any window reads the pod's rate exactly, whichever Prometheus scrapes it and when.
  const render = (factor: number, ms: number): Buffer => {
    const ts = ` ${ms}`;
    const t = (ms - EPOCH_MS) / 1000;
    // Per second of the clock, a counter grows by its workload value over 60 s: the workload spread over a minute.
    return Buffer.from(
      lines.map((l) => (l.kind === 'comment' ? l.head : l.kind === 'gauge' ? `${l.head}${l.value}${ts}` : `${l.head}${(l.value * factor * t) / 60}${ts}`)).join('\n') + '\n',
    );
  };
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let i = 0; i < opts.pods; i++) {
    const factor = podFactor(i, services);
    const server = createServer((req, res) => {
      if (req.url !== '/metrics') return void res.writeHead(404).end();
      if (native !== undefined && acceptsProtobuf(req.headers.accept)) {
        // Encoded once a second for each rate (pods of one factor share it), dated that second:
        // encoding every scrape of 1,000 pods would take this process more CPU than Prometheus.
        const second = Math.floor(Date.now() / 1000) * 1000;
        let cached = protobufBodies.get(factor);
        if (cached?.at !== second) protobufBodies.set(factor, (cached = { at: second, body: scaledProtobuf(native, factor, second) }));
        const proto = cached.body;
        return void res.writeHead(200, { 'content-type': PROTOBUF_CONTENT_TYPE, 'content-length': proto.length }).end(proto);
      }
      const body = render(factor, Date.now());
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': body.length }).end(body);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    servers.push(server);
    ports.push((server.address() as AddressInfo).port);
  }
  const address = (i: number): string => `127.0.0.1:${ports[i]}`;
  return {
    pods: opts.pods,
    detail: opts.detail,
    address,
    seriesPerPod: lines.filter((l) => l.kind !== 'comment').length,
    bytesPerScrape: native === undefined ? Buffer.byteLength(text) : scaledProtobuf(native, 1, Date.now()).length,
    staticConfigs: (only = () => true) =>
      Array.from({ length: opts.pods }, (_, i) => i)
        .filter(only)
        .map((i) => ({ targets: [address(i)], labels: podLabels(i, services) })),
    async stop() {
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
}

export interface FleetPrometheus {
  url: string;
  /** host:port it listens on. */
  address: string;
  dir: string;
  query(expr: string, time?: number): Promise<PromSample[]>;
  /** Prometheus's own /metrics, line by line: `name{labels}` -> value. */
  own(): Promise<Map<string, number>>;
  stop(): Promise<void>;
}

/**
 * A real Prometheus with the given prometheus.yml (as an object) and flags,
 * on a free port, with its TSDB (or agent WAL) in a temporary directory.
 */
export async function startFleetPrometheus(name: string, config: unknown, flags: string[] = []): Promise<FleetPrometheus> {
  const dir = await mkdtemp(join(tmpdir(), `rpcscope-${name}-`));
  const port = await freePort();
  await writeFile(join(dir, 'prometheus.yml'), stringify(config));
  const agent = flags.includes('--enable-feature=agent');
  const child: ChildProcess = spawn(
    PROMETHEUS_BIN,
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      agent ? `--storage.agent.path=${join(dir, 'wal')}` : `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...flags,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let log = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-8000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      // A TSDB with millions of series takes a while to close; it is thrown away anyway.
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`${name}: prometheus exited with ${child.exitCode}:\n${log}`);
    }
    try {
      if ((await fetch(`${url}/-/ready`)).ok) break;
    } catch {
      // not listening yet
    }
    if (i > 600) {
      await stop();
      throw new Error(`${name}: prometheus not ready after 60 s:\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    address: `127.0.0.1:${port}`,
    dir,
    async query(expr, time) {
      const params: Record<string, string> = { query: expr };
      if (time !== undefined) params.time = String(time);
      const res = await fetch(`${url}/api/v1/query`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString() });
      const json = (await res.json()) as { status: string; data?: { result: PromSample[] }; error?: string };
      if (json.status !== 'success' || !json.data) throw new Error(`${name}: ${expr}: ${json.error ?? res.status}`);
      return json.data.result;
    },
    async own() {
      const out = new Map<string, number>();
      for (const l of (await (await fetch(`${url}/metrics`)).text()).split('\n')) {
        const m = /^(\S+?)(\{[^}]*\})? (\S+)$/.exec(l);
        if (m) out.set(m[1]! + (m[2] ?? ''), Number(m[3]));
      }
      return out;
    },
    stop,
  };
}

/** Each rule group's last evaluation time and interval, in seconds, by group name, from Prometheus's own metrics. */
export function ruleGroups(own: Map<string, number>): Map<string, { lastDuration: number; interval: number; missed: number }> {
  const out = new Map<string, { lastDuration: number; interval: number; missed: number }>();
  for (const [k, v] of own) {
    const m = /^(prometheus_rule_group_last_duration_seconds|prometheus_rule_group_interval_seconds|prometheus_rule_group_iterations_missed_total)\{rule_group="[^"]*;([^"]+)"\}$/.exec(k);
    if (!m) continue;
    const g = out.get(m[2]!) ?? { lastDuration: NaN, interval: NaN, missed: 0 };
    if (m[1] === 'prometheus_rule_group_last_duration_seconds') g.lastDuration = v;
    else if (m[1] === 'prometheus_rule_group_interval_seconds') g.interval = v;
    else g.missed = v;
    out.set(m[2]!, g);
  }
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `expr` (a single number) until it reaches `want`, or throws after `timeoutMs`. */
export async function waitForCount(prom: FleetPrometheus, expr: string, want: number, timeoutMs: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const got = Number((await prom.query(expr))[0]?.value[1] ?? 0);
    if (got >= want) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 > timeoutMs) throw new Error(`${expr} is ${got} after ${timeoutMs / 1000} s, not ${want}`);
    await sleep(2000);
  }
}
