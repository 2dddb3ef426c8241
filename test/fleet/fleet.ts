// A small Kubernetes-shaped fleet on loopback: N pods of the demo order
// service, each with its own IP (127.0.0.2, 127.0.0.3, ...; Linux routes all
// of 127.0.0.0/8 to lo) and the same ports, as pods of one Deployment have;
// one inbound sidecar per pod (the real sidecar/bin/rpcscope, POD_NAME set as
// the Downward API would) on that pod's IP; a connection-level TCP balancer in
// front of the sidecars, as kube-proxy is in front of a ClusterIP Service; and
// optionally a real Prometheus scraping every sidecar's admin port with the
// target labels service discovery attaches (deploy/README.md, "Labels") and
// evaluating the repo's rules.
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOrderService, type Upstream } from '@rpcscope/demo';
import { parseExposition, sum, type Matchers, type Sample } from '../support/metrics-text.ts';
import { startPrometheus, type PromSample, type RunningPrometheus } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { startTcpBalancer, type Backend, type BalancerPick, type TcpBalancer } from './tcp-balancer.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RULES_FILE = join(REPO_ROOT, 'deploy', 'prometheus', 'rules', 'rpcscope.rules.yml');
export const PROTO_DIR = join(REPO_ROOT, 'demo', 'proto');

/** The pod IP of pod `i`: 127.0.0.2 upwards, leaving 127.0.0.1 to the balancer, clients and Prometheus. */
export const podIp = (i: number): string => `127.0.0.${2 + i}`;

/** One connection as /debug/connections lists it. */
export interface DebugConnection {
  id: number;
  peer: string;
  http_version: string;
  age_seconds: number;
  calls: number;
  calls_active: number;
  share: number;
}

export interface DebugSide {
  connections: number;
  calls: number;
  list: DebugConnection[];
}

/** The admin port's /debug/connections: every open connection on each side. */
export interface DebugConnections {
  downstream: DebugSide;
  upstream: DebugSide;
}

export async function debugConnections(adminUrl: string): Promise<DebugConnections> {
  const res = await fetch(`${adminUrl}/debug/connections`);
  if (!res.ok) throw new Error(`${adminUrl}/debug/connections: HTTP ${res.status}`);
  return (await res.json()) as DebugConnections;
}

export interface FleetOptions {
  /** Pods in the Deployment; default 3. */
  pods?: number;
  namespace?: string;
  service?: string;
  /** Further flags for every inbound sidecar (e.g. --max-connection-age 1s). */
  sidecarArgs?: string[];
  /** How the TCP balancer picks a pod per connection; default random, as kube-proxy's iptables mode. */
  pick?: BalancerPick;
  seed?: number;
  /** Start a Prometheus scraping the sidecars every second with the repo's rules; default false. */
  prometheus?: boolean;
  /** The order service's simulated service time scale; default 0 (only x-delay-ms adds time). */
  latencyScale?: number;
}

export interface FleetPod {
  /** The `pod` label and the POD_NAME of its sidecar: `orders-0`, ... */
  name: string;
  ip: string;
  app: Upstream;
  sidecar: SidecarProcess;
  /** The sidecar's proxy address: where the Service's endpoints point. */
  endpoint: Backend;
  /** `http://ip:port` of the sidecar's admin port. */
  adminUrl: string;
}

export interface Fleet {
  namespace: string;
  service: string;
  pods: FleetPod[];
  /** The kube-proxy stand-in in front of the sidecars. */
  balancer: TcpBalancer;
  /** The port every pod's app listens on (on its own IP). */
  appPort: number;
  /** The port every pod's sidecar listens on (on its own IP). */
  sidecarPort: number;
  prometheus: RunningPrometheus | undefined;
  /** Every sample on one pod's sidecar's /metrics. */
  scrape(pod: FleetPod): Promise<Sample[]>;
  /** `sum(name{where})` on each pod's sidecar, keyed by pod name. */
  perPod(name: string, where?: Matchers): Promise<Record<string, number>>;
  /** Polls until Prometheus has scraped `sum(name{where})` at the value each sidecar serves now. */
  waitForPrometheus(name: string, where?: Matchers, timeoutMs?: number): Promise<void>;
  /**
   * A recorded series of this fleet's namespace and service, as the rule
   * evaluation at or after `sinceMs` (epoch ms) wrote it: polls until that
   * evaluation has happened.
   */
  recorded(record: string, sinceMs: number, timeoutMs?: number): Promise<PromSample[]>;
  stop(): Promise<void>;
}

/** max / mean: 1 when even, N when one of N takes everything (the rules' and the sidecar's skew figure). */
export function maxOverMean(values: readonly number[]): number {
  const total = values.reduce((a, b) => a + b, 0);
  if (values.length === 0 || total === 0) return 0;
  return Math.max(...values) / (total / values.length);
}

/** Calls `read` until `done` holds for what it returns, or throws after `timeoutMs`; resolves with the last reading. */
export async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > until) throw new Error(`${what} not reached after ${timeoutMs} ms; last reading ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/** A port free on every one of `hosts`, so that pods can share it as pods of one Deployment share a containerPort. */
export async function sharedFreePort(hosts: readonly string[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = createServer();
      srv.once('error', reject);
      srv.listen(0, hosts[0] ?? '127.0.0.1', () => {
        const addr = srv.address();
        srv.close(() => (addr !== null && typeof addr !== 'string' ? resolve(addr.port) : reject(new Error('no port'))));
      });
    });
    const free = await Promise.all(hosts.map((h) => canListen(h, port)));
    if (free.every(Boolean)) return port;
  }
  throw new Error(`no port free on all of ${hosts.join(', ')}`);
}

/** Retries `start` on EADDRINUSE: a shared port can be taken between the check and the listen. */
async function withPortRetry<T>(hosts: readonly string[], start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const port = await sharedFreePort(hosts);
    try {
      return await start(port);
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('EADDRINUSE')) throw err;
    }
  }
}

async function scrapeUrl(adminUrl: string): Promise<Sample[]> {
  const res = await fetch(`${adminUrl}/metrics`);
  if (!res.ok) throw new Error(`${adminUrl}/metrics: HTTP ${res.status}`);
  return parseExposition(await res.text());
}

/** Every sample an admin port serves on /metrics. */
export const scrapeAdmin = scrapeUrl;

/** A PromQL selector for `name{where}` with exact matchers only. */
function selector(name: string, where: Matchers): string {
  const parts = Object.entries(where).map(([k, v]) => {
    if (typeof v !== 'string') throw new Error(`selector: only exact matchers reach Prometheus (${k})`);
    return `${k}=${JSON.stringify(v)}`;
  });
  return `${name}{${parts.join(',')}}`;
}

export async function startFleet(opts: FleetOptions = {}): Promise<Fleet> {
  const count = opts.pods ?? 3;
  const namespace = opts.namespace ?? 'fleet';
  const service = opts.service ?? 'orders';
  const ips = Array.from({ length: count }, (_, i) => podIp(i));
  const names = ips.map((_, i) => `${service}-${i}`);
  const cleanups: (() => Promise<unknown>)[] = [];
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  };

  try {
    const apps = await withPortRetry(ips, async (port) => {
      const started = await Promise.allSettled(ips.map((host, i) => startOrderService({ host, port, podName: names[i], latencyScale: opts.latencyScale ?? 0 })));
      for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.close());
      const failed = started.find((s) => s.status === 'rejected');
      if (failed !== undefined) {
        await stop();
        throw failed.reason;
      }
      return started.map((s) => (s as PromiseFulfilledResult<Upstream>).value);
    });
    const appPort = apps[0]!.port;

    const [sidecarPort, adminPort] = [await sharedFreePort(ips), await sharedFreePort(ips)];
    // The default log level: the helper reads the addresses from the info-level "rpcscope started" line.
    const started = await Promise.allSettled(
      apps.map((app, i) =>
        startSidecarProcess(
          ['--upstream', app.url, '--listen', `${ips[i]}:${sidecarPort}`, '--admin', `${ips[i]}:${adminPort}`, '--proto', PROTO_DIR, ...(opts.sidecarArgs ?? [])],
          { POD_NAME: names[i]!, POD_NAMESPACE: namespace },
        ),
      ),
    );
    for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.stop());
    const failed = started.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
    const sidecars = started.map((s) => (s as PromiseFulfilledResult<SidecarProcess>).value);

    const pods: FleetPod[] = apps.map((app, i) => ({
      name: names[i]!,
      ip: ips[i]!,
      app,
      sidecar: sidecars[i]!,
      endpoint: { host: ips[i]!, port: sidecarPort },
      adminUrl: `http://${ips[i]}:${adminPort}`,
    }));

    const balancer = await startTcpBalancer({ backends: pods.map((p) => p.endpoint), pick: opts.pick ?? 'random', seed: opts.seed ?? 1 });
    cleanups.push(() => balancer.close());

    let prometheus: RunningPrometheus | undefined;
    if (opts.prometheus === true) {
      prometheus = await startPrometheus({
        targets: pods.map((p) => ({ address: `${p.ip}:${adminPort}`, labels: { namespace, service, pod: p.name } })),
        ruleFiles: [RULES_FILE],
      });
      cleanups.push(() => prometheus!.stop());
    }

    const scrape = (pod: FleetPod): Promise<Sample[]> => scrapeUrl(pod.adminUrl);
    const perPod = async (name: string, where: Matchers = {}): Promise<Record<string, number>> => {
      const scraped = await Promise.all(pods.map(scrape));
      return Object.fromEntries(pods.map((p, i) => [p.name, sum(scraped[i]!, name, where)]));
    };

    return {
      namespace,
      service,
      pods,
      balancer,
      appPort,
      sidecarPort,
      prometheus,
      scrape,
      perPod,
      async waitForPrometheus(name, where = {}, timeoutMs = 15_000) {
        if (prometheus === undefined) throw new Error('waitForPrometheus: the fleet runs without Prometheus');
        const want = await perPod(name, where);
        const expr = `sum by (pod) (${selector(name, { ...where, namespace, service })})`;
        const until = Date.now() + timeoutMs;
        for (;;) {
          const got = Object.fromEntries((await prometheus.query(expr)).map((s) => [s.metric.pod ?? '', Number(s.value[1])]));
          if (Object.entries(want).every(([pod, v]) => v === 0 || got[pod] === v)) return;
          if (Date.now() > until) throw new Error(`Prometheus did not catch up on ${expr}: has ${JSON.stringify(got)}, sidecars serve ${JSON.stringify(want)}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      },
      async recorded(record, sinceMs, timeoutMs = 10_000) {
        if (prometheus === undefined) throw new Error('recorded: the fleet runs without Prometheus');
        const series = selector(record, { namespace, service });
        const expr = `${series} and (timestamp(${series}) >= ${sinceMs / 1000})`;
        const until = Date.now() + timeoutMs;
        for (;;) {
          const got = await prometheus.query(expr);
          if (got.length > 0) return got;
          if (Date.now() > until) throw new Error(`no evaluation of ${series} since ${new Date(sinceMs).toISOString()} after ${timeoutMs} ms`);
          await new Promise((r) => setTimeout(r, 250));
        }
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
