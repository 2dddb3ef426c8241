// A small fleet carrying real traffic, recorded by a real Prometheus: the
// "every PromQL expression returns data" tests and the panel tests query it.
//
// Three pods of the demo order service, each behind its own inbound sidecar
// (sidecar/bin/rpcscope), all on 127.0.0.1 ports. The demo traffic generator
// drives every protocol through the sidecars with pod 0 taking most of the
// calls, as a sticky HTTP/2 connection would leave it. Traffic runs in rounds
// until stop(): each round opens its own connections and closes them at its
// end (closed-connection histograms, client GOAWAYs) and cancels the calls
// still open after a short grace (client resets). Prometheus scrapes the admin
// ports every second with the target labels Kubernetes service discovery
// would attach (deploy/README.md, "Labels") and evaluates the repo's rules.
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startOrderService, type Upstream } from '@rpcscope/demo';
import { runTraffic, type TrafficOptions } from '@rpcscope/demo/traffic';
import { startPrometheus, type RunningPrometheus, type ScrapeTarget } from './prometheus.ts';
import { sendEdgeCalls } from './recorded-stack-edge-calls.ts';
import { startSidecarProcess, type SidecarProcess } from './sidecar-process.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RULES_FILE = join(REPO_ROOT, 'deploy', 'prometheus', 'rules', 'rpcscope.rules.yml');
const PROTO_DIR = join(REPO_ROOT, 'demo', 'proto');

/** Calls per second started at each pod: pod 0 takes four times each other's, a cross-pod skew of 2. */
export const DEFAULT_RPS = [32, 8, 8] as const;
/** How long each traffic round starts calls; its connections close at its end. */
const ROUND_MS = 3000;
/** Calls still open this long after a round's last start are cancelled by their clients. */
const GRACE_MS = 200;

export interface RecordedStackOptions {
  /** Calls per second per pod, one entry per pod; default DEFAULT_RPS. */
  rps?: readonly number[];
  namespace?: string;
  service?: string;
  /**
   * A `cluster` target label on every target, as a Prometheus reading several
   * clusters attaches (deploy/README.md, "Labels"); default none, as with one
   * cluster. With it, a dashboard's `cluster` matcher has a value to select.
   */
  cluster?: string;
  /** Rule files Prometheus evaluates every second; default the repo's rpcscope.rules.yml. */
  ruleFiles?: string[];
  /** Seeds the traffic mix, so a run repeats; default 1. */
  seed?: number;
  /** How long to wait for Prometheus to hold every pod's first round; default 30 000 ms. */
  readyTimeoutMs?: number;
  /**
   * Adds a pod of service `<service>-gateway` whose sidecar sends half of its
   * REST calls to the gRPC side of its own order service (`--split`) and
   * mirrors the others to a second one (`--shadow`): the translated and shadow
   * series the protocol migration dashboard reads. Its target is the last of `targets`
   * and not in `pods`.
   */
  migration?: boolean;
}

export interface RecordedStack {
  /** Prometheus's base URL, e.g. http://127.0.0.1:9090. */
  prometheusUrl: string;
  prometheus: RunningPrometheus;
  /** The sidecars' admin addresses with their target labels, in pod order. */
  targets: ScrapeTarget[];
  /** The `pod` label of each pod; the first is the one the load sticks to. */
  pods: string[];
  stop(): Promise<void>;
}

export async function startRecordedStack(opts: RecordedStackOptions = {}): Promise<RecordedStack> {
  const rps = opts.rps ?? DEFAULT_RPS;
  const namespace = opts.namespace ?? 'demo';
  const service = opts.service ?? 'orders';
  const seed = opts.seed ?? 1;
  const pods = rps.map((_, i) => `${service}-${i}`);
  const clusterLabel: Record<string, string> = opts.cluster === undefined ? {} : { cluster: opts.cluster };

  const cleanups: (() => Promise<unknown>)[] = [];
  const stopped = new AbortController();
  const traffic: Promise<void>[] = [];
  const failures: unknown[] = [];
  const stop = async (): Promise<void> => {
    stopped.abort();
    await Promise.all(traffic);
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
    cleanups.length = 0;
  };

  try {
    const apps: Upstream[] = await settleAll(
      pods.map(async (podName) => {
        const app = await startOrderService({ podName });
        cleanups.push(() => app.close());
        return app;
      }),
    );
    const sidecars = await settleAll(
      apps.map(async (app, i) => {
        const sidecar: SidecarProcess = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR], {
          POD_NAME: pods[i] ?? '',
          POD_NAMESPACE: namespace,
        });
        cleanups.push(() => sidecar.stop());
        // A test process that ends without calling stop() must not leave its sidecars running.
        const killOnExit = (): void => {
          sidecar.proc.kill('SIGKILL');
        };
        process.once('exit', killOnExit);
        cleanups.push(async () => process.off('exit', killOnExit));
        return sidecar;
      }),
    );
    const targets: ScrapeTarget[] = sidecars.map((s, i) => ({
      address: new URL(s.adminUrl).host,
      labels: { ...clusterLabel, namespace, service, pod: pods[i] ?? '' },
    }));
    const gateway = opts.migration ? await startGateway(cleanups) : undefined;
    if (gateway) targets.push({ address: new URL(gateway.adminUrl).host, labels: { ...clusterLabel, namespace, service: `${service}-gateway`, pod: `${service}-gateway-0` } });
    const prometheus = await startPrometheus({ targets, ruleFiles: opts.ruleFiles ?? [RULES_FILE] });
    cleanups.push(() => prometheus.stop());

    const driven = gateway ? [...sidecars, gateway] : sidecars;
    const firstRounds = driven.map(
      (sidecar, i) =>
        new Promise<void>((firstRoundDone) => {
          const gatewayMix = i >= sidecars.length ? GATEWAY_MIX : undefined;
          traffic.push(keepTraffic(sidecar.url, rps[i] ?? GATEWAY_RPS, seed * 1000 + i * 100, stopped.signal, failures, firstRoundDone, gatewayMix));
        }),
    );

    // Every pod's first round is over (calls, resets, closed connections,
    // GOAWAYs), Prometheus has scraped every pod since, and holds a call rate
    // for each.
    const timeoutMs = opts.readyTimeoutMs ?? 30_000;
    const until = Date.now() + timeoutMs;
    const roundsTimer = new AbortController();
    try {
      const late = sleep(timeoutMs, undefined, { signal: roundsTimer.signal }).then(() => {
        throw new Error(`traffic rounds did not end within ${timeoutMs} ms`);
      });
      await Promise.race([Promise.all(firstRounds), late]);
      roundsTimer.abort();
      const roundsOver = Date.now() / 1000;
      await prometheus.waitForData(`count(timestamp(up) > ${roundsOver}) == ${targets.length}`, until - Date.now());
      await prometheus.waitForData(`count(sum by (pod) (rate(rpcscope_calls_total[4s])) > 0) == ${targets.length}`, until - Date.now());
    } catch (err) {
      const logs = driven.map((s, i) => `${targets[i]?.labels.pod}: ${s.log().slice(-2000)}`).join('\n');
      roundsTimer.abort();
      throw new Error(`${(err as Error).message}\ntraffic failures: ${failures.map(String).join('; ') || 'none'}\n${logs}`, { cause: err });
    }
    return { prometheusUrl: prometheus.url, prometheus, targets, pods, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Calls per second started at the gateway pod of `migration`. */
const GATEWAY_RPS = 4;
const GATEWAY_MIX: TrafficOptions['mix'] = { rest: 1 };

/** The `migration` pod: its own order service behind a sidecar that translates a share of the REST calls and shadows the rest to a second one. */
async function startGateway(cleanups: (() => Promise<unknown>)[]): Promise<SidecarProcess> {
  const [app, shadow] = await settleAll([0, 1].map(async () => {
    const a = await startOrderService({});
    cleanups.push(() => a.close());
    return a;
  }));
  if (!app || !shadow) throw new Error('gateway apps did not start');
  // Half of the REST calls of two operations go through the transcoder
  // (translated series); the other half pass as REST and are mirrored (shadow
  // series): cheap HTTP/1.1 calls that complete even on a loaded machine.
  const split = ['GetOrder', 'ListOrders'].flatMap((m) => ['--split', `order.v1.OrderService/${m}=50`]);
  const sidecar = await startSidecarProcess(['--upstream', app.url, '--grpc-upstream', app.url, '--proto', PROTO_DIR, ...split, '--shadow', shadow.url], {
    POD_NAME: 'gateway-0',
    POD_NAMESPACE: 'demo',
  });
  cleanups.push(() => sidecar.stop());
  const killOnExit = (): void => {
    sidecar.proc.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  cleanups.push(async () => process.off('exit', killOnExit));
  return sidecar;
}

/** Promise.all that waits for every start, so that the ones that did start are cleaned up when another fails. */
async function settleAll<T>(starts: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(starts);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}

/** Rounds of generator traffic at one sidecar until `stopped`, the edge calls alongside the first; `firstRoundDone` once both are over. */
async function keepTraffic(
  url: string,
  rps: number,
  seed: number,
  stopped: AbortSignal,
  failures: unknown[],
  firstRoundDone: () => void,
  mix?: TrafficOptions['mix'],
): Promise<void> {
  const edgeCalls = sendEdgeCalls(url).catch((err: unknown) => failures.push(err));
  for (let round = 0; !stopped.aborted; round++) {
    if (round === 1) await edgeCalls.then(firstRoundDone);
    // Not AbortSignal.any: on Node 20 each one leaves a listener on `stopped`.
    const roundEnd = new AbortController();
    const endRound = (): void => roundEnd.abort();
    const timer = setTimeout(endRound, ROUND_MS + GRACE_MS);
    stopped.addEventListener('abort', endRound, { once: true });
    try {
      await runTraffic({ target: url, durationMs: ROUND_MS, rps, seed: seed + round, signal: roundEnd.signal, ...(mix ? { mix } : {}) });
    } catch (err) {
      // A failing round (say, a sidecar that died) must not spin: note it and pause.
      if (failures.length < 10) failures.push(err);
      await sleep(500, undefined, { signal: stopped }).catch(() => {});
    } finally {
      clearTimeout(timer);
      stopped.removeEventListener('abort', endRound);
    }
  }
  await edgeCalls;
  firstRoundDone();
}
