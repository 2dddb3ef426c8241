// A steady, bounded mix of order-service calls through every protocol the
// sidecar observes, for `npm run demo`, fleet simulations and soak runs.
import http from 'node:http';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { GrpcCodeName } from './grpc-code-names.ts';
import { seededRandom } from './seeded-random.ts';
import { sleep } from './sleep.ts';
import { connectCaller, grpcJsCaller, restCaller } from './traffic-callers.ts';
import type { OrderCaller } from './traffic-callers.ts';
import { pickScenario } from './traffic-scenarios.ts';

/** `grpc-js` and `grpc` are both gRPC on the wire, from two client stacks (@grpc/grpc-js and connect-node). */
export const TRAFFIC_PROTOCOLS = ['grpc-js', 'grpc', 'connect', 'grpc-web', 'rest'] as const;
export type TrafficProtocol = (typeof TRAFFIC_PROTOCOLS)[number];

export type TrafficOptions = {
  /** The order service, or a sidecar in front of it: `http://host:port`. */
  target: string;
  /** How long to keep starting calls; default 10 000 ms. Calls in flight then get up to CALL_CAP_MS to finish. */
  durationMs?: number;
  /** Calls started per second; default 20. */
  rps?: number;
  /** Relative weight of each protocol; a protocol left out is not used. Default: every protocol, REST and gRPC heavier. */
  mix?: Partial<Record<TrafficProtocol, number>>;
  /** Stop after this many calls even if durationMs has not passed; default rps x duration. */
  maxCalls?: number;
  /** A call due while this many are open is skipped (and counted), so a stalled target cannot pile calls up; default 64. */
  maxInFlight?: number;
  /** Same seed, same sequence of protocols and scenarios; default random. */
  seed?: number;
  /** Aborting it stops the run early and cancels the calls in flight. */
  signal?: AbortSignal;
};

export type ProtocolCounts = {
  calls: number;
  ok: number;
  failed: number;
  /** Outcomes by the gRPC code name the client saw (REST by the HTTP status table). */
  codes: Partial<Record<GrpcCodeName, number>>;
};

export type TrafficResult = {
  /** Calls started and finished. */
  calls: number;
  /** Calls not started because maxInFlight were open. */
  skipped: number;
  durationMs: number;
  byProtocol: Record<TrafficProtocol, ProtocolCounts>;
  /** Calls per scenario (get, get-missing, slow, deadline-miss, watch, ...). */
  byScenario: Record<string, number>;
};

const DEFAULT_MIX: Record<TrafficProtocol, number> = { 'grpc-js': 2, grpc: 2, connect: 2, 'grpc-web': 1, rest: 3 };
/** No single call may outlive this, whatever the target does: the run's end stays bounded. */
const CALL_CAP_MS = 10_000;
const MAX_RPS = 5_000;
const MAX_DURATION_MS = 24 * 3600_000;

export async function runTraffic(opts: TrafficOptions): Promise<TrafficResult> {
  const settings = validate(opts);
  const target = new URL(settings.target);
  const random = seededRandom(settings.seed);
  const callers = openCallers(target, settings.protocols.map(([p]) => p));
  const stop = new AbortController();
  const onExternalAbort = () => stop.abort(opts.signal?.reason);
  opts.signal?.addEventListener('abort', onExternalAbort, { once: true });

  const result: TrafficResult = { calls: 0, skipped: 0, durationMs: 0, byProtocol: emptyCounts(), byScenario: {} };
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const interval = 1000 / settings.rps;
  try {
    for (let n = 0; n < settings.maxCalls; n++) {
      const wait = started + n * interval - performance.now();
      if (wait > 0) await sleep(wait, stop.signal).catch(() => {});
      if (stop.signal.aborted || performance.now() - started >= settings.durationMs) break;
      if (inFlight.size >= settings.maxInFlight) {
        result.skipped++;
        continue;
      }
      const protocol = pickProtocol(settings.protocols, random);
      const scenario = pickScenario(random);
      result.byScenario[scenario.name] = (result.byScenario[scenario.name] ?? 0) + 1;
      const caller = callers.get(protocol)!;
      const running = caller
        .call(scenario, AbortSignal.any([stop.signal, AbortSignal.timeout(CALL_CAP_MS)]))
        .then((code) => count(result, protocol, code))
        .finally(() => inFlight.delete(running));
      inFlight.add(running);
    }
    await Promise.all(inFlight);
  } finally {
    opts.signal?.removeEventListener('abort', onExternalAbort);
    stop.abort();
    for (const caller of callers.values()) caller.close();
  }
  result.durationMs = Math.round(performance.now() - started);
  return result;
}

type Settings = Required<Omit<TrafficOptions, 'mix' | 'signal'>> & { protocols: Array<[TrafficProtocol, number]> };

function validate(opts: TrafficOptions): Settings {
  let url: URL;
  try {
    url = new URL(opts.target);
  } catch {
    throw new Error(`target ${JSON.stringify(opts.target)} is not a URL; expected http://host:port`);
  }
  if (url.protocol !== 'http:') throw new Error(`target ${opts.target}: only http:// (cleartext h2c and HTTP/1.1) is supported`);
  const durationMs = opts.durationMs ?? 10_000;
  const rps = opts.rps ?? 20;
  if (!(durationMs > 0 && durationMs <= MAX_DURATION_MS)) throw new Error(`durationMs ${durationMs}: expected 0 < durationMs <= ${MAX_DURATION_MS}`);
  if (!(rps > 0 && rps <= MAX_RPS)) throw new Error(`rps ${rps}: expected 0 < rps <= ${MAX_RPS}`);
  const mix = opts.mix ?? DEFAULT_MIX;
  const protocols: Array<[TrafficProtocol, number]> = [];
  for (const [name, weight] of Object.entries(mix)) {
    if (!(TRAFFIC_PROTOCOLS as readonly string[]).includes(name)) throw new Error(`mix: unknown protocol ${name}; expected one of ${TRAFFIC_PROTOCOLS.join(', ')}`);
    if (!(weight >= 0 && Number.isFinite(weight))) throw new Error(`mix: weight of ${name} is ${weight}; expected a number >= 0`);
    if (weight > 0) protocols.push([name as TrafficProtocol, weight]);
  }
  if (protocols.length === 0) throw new Error('mix: give at least one protocol a weight above 0');
  return {
    target: opts.target,
    durationMs,
    rps,
    maxCalls: Math.max(0, Math.floor(opts.maxCalls ?? Math.ceil((rps * durationMs) / 1000))),
    maxInFlight: Math.max(1, Math.floor(opts.maxInFlight ?? 64)),
    seed: opts.seed ?? Math.floor(Math.random() * 2 ** 32),
    protocols,
  };
}

function openCallers(target: URL, protocols: TrafficProtocol[]): Map<TrafficProtocol, OrderCaller> {
  const baseUrl = target.origin;
  const callers = new Map<TrafficProtocol, OrderCaller>();
  for (const protocol of protocols) {
    switch (protocol) {
      case 'grpc-js':
        callers.set(protocol, grpcJsCaller(target));
        break;
      case 'grpc': {
        // Own session managers, so close() can end the HTTP/2 connections the transports would otherwise keep.
        const sessionManager = new Http2SessionManager(baseUrl);
        callers.set(protocol, connectCaller(createGrpcTransport({ baseUrl, sessionManager }), () => sessionManager.abort()));
        break;
      }
      case 'connect': {
        const sessionManager = new Http2SessionManager(baseUrl);
        const transport = createConnectTransport({ baseUrl, httpVersion: '2', sessionManager, useBinaryFormat: false });
        callers.set(protocol, connectCaller(transport, () => sessionManager.abort()));
        break;
      }
      case 'grpc-web': {
        // HTTP/1.1, as gRPC-Web comes from browsers behind an HTTP/1.1 hop.
        const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
        const transport = createGrpcWebTransport({ baseUrl, httpVersion: '1.1', nodeOptions: { agent } });
        callers.set(protocol, connectCaller(transport, () => agent.destroy()));
        break;
      }
      case 'rest':
        callers.set(protocol, restCaller(target, new http.Agent({ keepAlive: true, maxSockets: 16 })));
        break;
    }
  }
  return callers;
}

function pickProtocol(protocols: Array<[TrafficProtocol, number]>, random: () => number): TrafficProtocol {
  const total = protocols.reduce((sum, [, w]) => sum + w, 0);
  let at = random() * total;
  for (const [protocol, weight] of protocols) {
    at -= weight;
    if (at < 0) return protocol;
  }
  return protocols[0]![0];
}

function emptyCounts(): Record<TrafficProtocol, ProtocolCounts> {
  return Object.fromEntries(TRAFFIC_PROTOCOLS.map((p) => [p, { calls: 0, ok: 0, failed: 0, codes: {} }])) as Record<TrafficProtocol, ProtocolCounts>;
}

function count(result: TrafficResult, protocol: TrafficProtocol, code: GrpcCodeName): void {
  const counts = result.byProtocol[protocol];
  result.calls++;
  counts.calls++;
  if (code === 'OK') counts.ok++;
  else counts.failed++;
  counts.codes[code] = (counts.codes[code] ?? 0) + 1;
}
