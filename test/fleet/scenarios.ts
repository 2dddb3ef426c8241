// The fleet scenarios, each returning the figures a user would read: the tests
// assert on them and figures.ts prints them.
import type { Fleet } from './fleet.ts';
import { maxOverMean } from './fleet.ts';
import { OrderClient, sendLoad, type CallResult, type LoadResult } from './order-client.ts';
import type { OutboundSidecar } from './outbound-sidecar.ts';

/** Each pod's part of `counts`, 0..1, every pod of the fleet present. */
export function sharesOf(fleet: Fleet, counts: Record<string, number>): Record<string, number> {
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  return Object.fromEntries(fleet.pods.map((p) => [p.name, total === 0 ? 0 : (counts[p.name] ?? 0) / total]));
}

/** max / mean over every pod of the fleet (a pod with no calls counts as 0). */
export function podSkew(fleet: Fleet, counts: Record<string, number>): number {
  return maxOverMean(fleet.pods.map((p) => counts[p.name] ?? 0));
}

/** What the inbound sidecars counted while `run` ran: per pod, inbound calls. */
export async function inboundDuring<T>(fleet: Fleet, run: () => Promise<T>): Promise<{ result: T; perPod: Record<string, number> }> {
  const before = await fleet.perPod('rpcscope_calls_total', { direction: 'inbound' });
  const result = await run();
  const after = await fleet.perPod('rpcscope_calls_total', { direction: 'inbound' });
  return { result, perPod: Object.fromEntries(fleet.pods.map((p) => [p.name, (after[p.name] ?? 0) - (before[p.name] ?? 0)])) };
}

export interface BalancerRun {
  load: LoadResult;
  /** Inbound calls per pod, as the pods' sidecars counted them. */
  perPod: Record<string, number>;
  /** Connections the client opened through the TCP balancer. */
  connections: number;
  /** GOAWAY frames the pods' sidecars sent. */
  goaways: number;
}

/** One grpc-js client through the TCP balancer: `calls` calls over about `durationMs`. */
export async function clientThroughBalancer(fleet: Fleet, opts: { calls: number; durationMs: number; concurrency?: number; delayMs?: number }): Promise<BalancerRun> {
  const connectionsBefore = Object.values(fleet.balancer.connectionsPerBackend()).reduce((a, b) => a + b, 0);
  const goawaysBefore = Object.values(await fleet.perPod('rpcscope_http2_goaways_total', { side: 'proxy' })).reduce((a, b) => a + b, 0);
  const client = new OrderClient(`${fleet.balancer.host}:${fleet.balancer.port}`);
  const { result: load, perPod } = await inboundDuring(fleet, () =>
    sendLoad(client, { calls: opts.calls, durationMs: opts.durationMs, concurrency: opts.concurrency ?? 4, ...(opts.delayMs === undefined ? {} : { delayMs: opts.delayMs }) }),
  );
  client.close();
  const connections = Object.values(fleet.balancer.connectionsPerBackend()).reduce((a, b) => a + b, 0) - connectionsBefore;
  const goaways = Object.values(await fleet.perPod('rpcscope_http2_goaways_total', { side: 'proxy' })).reduce((a, b) => a + b, 0) - goawaysBefore;
  return { load, perPod, connections, goaways };
}

/**
 * How closely a run's calls follow a cycle over `endpoints` pods: the share of
 * calls answered by the same pod as the call started `endpoints` places later.
 * Round robin from one client gives 1, less the few places where calls overtook
 * one another on the way or a pick was made again. A picker that chooses at random
 * matches each pair with probability 1/endpoints, independently (the pods of one
 * chain of calls n, n+N, n+2N... are independent draws), so its share is a
 * binomial proportion around 1/endpoints.
 */
export function cycleShare(results: readonly CallResult[], endpoints: number): number {
  let same = 0;
  for (let i = 0; i + endpoints < results.length; i++) if (results[i]!.pod === results[i + endpoints]!.pod) same++;
  return same / (results.length - endpoints);
}

export interface OutboundRun {
  load: LoadResult;
  /** The outbound sidecar's rpcscope_upstream_calls_total by endpoint, during the run. */
  perEndpoint: Record<string, number>;
  /** Inbound calls per pod during the run. */
  perPod: Record<string, number>;
  loadSkew: number;
}

/** One grpc-js client on one connection to an outbound sidecar: `calls` calls, `concurrency` at a time. */
export async function clientThroughOutbound(fleet: Fleet, outbound: OutboundSidecar, opts: { calls: number; concurrency?: number; durationMs?: number }): Promise<OutboundRun> {
  const before = await outbound.upstreamCalls();
  const client = new OrderClient(outbound.target);
  const { result: load, perPod } = await inboundDuring(fleet, () => sendLoad(client, { calls: opts.calls, concurrency: opts.concurrency ?? 4, ...(opts.durationMs === undefined ? {} : { durationMs: opts.durationMs }) }));
  client.close();
  const after = await outbound.upstreamCalls();
  const perEndpoint = Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]));
  return { load, perEndpoint, perPod, loadSkew: await outbound.loadSkew() };
}

export interface SlowMixRun {
  results: CallResult[];
  /** The slow calls per answering pod. */
  slowPerPod: Record<string, number>;
  /** The most calls in flight seen at once on each endpoint (sampled every 100 ms). */
  peakInFlight: Record<string, number>;
  loadSkew: number;
}

/**
 * An open-loop caller on one connection: a call every `intervalMs`, every
 * third one slow (`slowMs` of service time). Round robin over three endpoints
 * sends every slow call to the same one; a picker that looks at calls in
 * flight spreads them.
 */
export async function slowMixThroughOutbound(outbound: OutboundSidecar, opts: { calls: number; intervalMs: number; slowMs: number }): Promise<SlowMixRun> {
  const client = new OrderClient(outbound.target);
  const peakInFlight: Record<string, number> = {};
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      for (const [endpoint, n] of Object.entries(await outbound.upstreamActive())) peakInFlight[endpoint] = Math.max(peakInFlight[endpoint] ?? 0, n);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const pending: Promise<CallResult & { slow: boolean }>[] = [];
  const begin = Date.now();
  for (let n = 0; n < opts.calls; n++) {
    const wait = begin + n * opts.intervalMs - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const slow = n % 3 === 0;
    pending.push(client.getOrder(`ord-${String((n % 24) + 1).padStart(6, '0')}`, { delayMs: slow ? opts.slowMs : 0 }).then((r) => ({ ...r, slow })));
  }
  const results = await Promise.all(pending);
  sampling = false;
  await sampler;
  client.close();
  const slowPerPod: Record<string, number> = {};
  for (const r of results) if (r.slow) slowPerPod[r.pod] = (slowPerPod[r.pod] ?? 0) + 1;
  return { results, slowPerPod, peakInFlight, loadSkew: await outbound.loadSkew() };
}
