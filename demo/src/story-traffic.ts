// The demo's traffic: a migration from REST to gRPC told in one run. A
// storefront calls the order Service through the connection-level balancer:
// at the start REST carries nearly everything; over the first third of the run
// gRPC takes over (Connect and gRPC-Web alongside). gRPC's one long-lived
// HTTP/2 connection sits on one pod, so the migration pins that pod. A
// back-office app calls the same pods through its outbound sidecar, which
// balances every call. A web app (full-stack TypeScript) asks the same
// operations over tRPC, several procedures a page in one batch. Every call is
// tallied here as its client saw it, so the figures rpcscope shows can be
// checked against what was done.
import { setMaxListeners } from 'node:events';
import { FAIL_CODE_HEADER, DELAY_HEADER, IDEMPOTENCY_HEADER } from './order-operations.ts';
import { seededRandom } from './seeded-random.ts';
import { sleep } from './sleep.ts';
import {
  connectCaller,
  GRPC_FAMILY,
  grpcCaller,
  grpcWebCaller,
  restCaller,
  trpcCaller,
  type CallOutcome,
  type StoryCall,
  type StoryCaller,
  type StorefrontProtocol,
  type StoryOperation,
  type StoryProtocol,
} from './story-callers.ts';
import type { GrpcCodeName } from './grpc-code-names.ts';

export type StoryClient = 'storefront' | 'backoffice' | 'webapp';
export const STORY_PROTOCOLS: readonly StorefrontProtocol[] = ['rest', 'grpc', 'connect', 'grpc_web'];

/** The moments of a run of `durationMs`, in ms from its start. */
export interface StoryTimeline {
  durationMs: number;
  /** gRPC has taken over from REST. */
  migratedMs: number;
  /** --max-connection-age is rolled out, the pinned pod's sidecar first. */
  remedyMs: number;
  /** The pinned window: migrated, not yet remedied. */
  before: [number, number];
  /**
   * The healed window as planned; the summary starts it where the rollout
   * actually ended, since restarting three sidecars one by one takes from a
   * few seconds to ten on a busy machine.
   */
  after: [number, number];
}

/**
 * The remedy comes at 40 % of the run, not half way, so that the healed window
 * after a slow rollout is still as long as the pinned one before it.
 */
export function storyTimeline(durationMs: number): StoryTimeline {
  const at = (share: number): number => Math.round(durationMs * share);
  return { durationMs, migratedMs: at(0.25), remedyMs: at(0.4), before: [at(0.25), at(0.4)], after: [at(0.6), durationMs] };
}

/** The storefront's share of calls per protocol at `t` ms: REST 80 % falling to 10 %, gRPC 10 % rising to 70 %. */
export function protocolShares(t: number, timeline: StoryTimeline): Record<StorefrontProtocol, number> {
  const p = Math.min(1, Math.max(0, t / timeline.migratedMs));
  const rest = 0.8 - 0.7 * p;
  const grpc = 0.1 + 0.6 * p;
  return { rest, grpc, connect: (1 - rest - grpc) / 2, grpc_web: (1 - rest - grpc) / 2 };
}

/** One call as its client saw it. */
export interface CallTally {
  /** ms from the start of the run when the call ended. */
  endedMs: number;
  client: StoryClient;
  protocol: StoryProtocol;
  operation: StoryOperation;
  scenario: string;
  code: GrpcCodeName;
  pod: string;
  /** Whether the call carried a deadline the sidecar can read (gRPC family only). */
  deadline: boolean;
}

export interface StoryTraffic {
  /** Resolves with every call once the run has ended (the duration passed or stop()). */
  done: Promise<CallTally[]>;
  /** Calls finished so far. */
  tallies(): readonly CallTally[];
  stop(): void;
}

/** `grpcOnly`: a scenario only an HTTP/2 gRPC client can tell (a stream reset with CANCEL). */
type Scenario = { name: string; weight: number; call: (r: () => number) => StoryCall; grpcOnly?: boolean };

const fullOrderId = (r: () => number): string => `ord-${String(1 + Math.floor(r() * 24)).padStart(6, '0')}`;

/** What the storefront asks for: mostly the full order, the 1,000-order list now and then, and the errors an SRE watches. */
const STOREFRONT: Scenario[] = [
  { name: 'get', weight: 54, call: (r) => ({ operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000 }) },
  { name: 'get-no-deadline', weight: 8, call: (r) => ({ operation: 'GetOrder', id: fullOrderId(r) }) },
  { name: 'get-missing', weight: 5, call: (r) => ({ operation: 'GetOrder', id: `ord-9${String(Math.floor(r() * 1e5)).padStart(5, '0')}`, deadlineMs: 1000 }) },
  { name: 'get-unavailable', weight: 3, call: (r) => ({ operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000, headers: { [FAIL_CODE_HEADER]: '14' } }) },
  { name: 'deadline-miss', weight: 3, call: (r) => ({ operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 120, headers: { [DELAY_HEADER]: '400' } }) },
  { name: 'list-1000', weight: 3, call: () => ({ operation: 'ListOrders', pageSize: 1000, deadlineMs: 3000 }) },
  { name: 'create', weight: 18, call: () => ({ operation: 'CreateOrder', deadlineMs: 2000 }) },
  { name: 'watch-cancel', weight: 6, grpcOnly: true, call: (r) => ({ operation: 'WatchOrders', cancelAfterMs: 200 + Math.floor(r() * 500) }) },
];

const BACKOFFICE: Scenario[] = [
  { name: 'get', weight: 80, call: (r) => ({ operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000 }) },
  { name: 'create', weight: 20, call: () => ({ operation: 'CreateOrder', deadlineMs: 2000 }) },
];

/**
 * The web app's pages, each the procedures it asks for at once: an order with
 * two related ones (now and then one that does not exist, so the batch is
 * mixed), a page of orders beside one order, or a create on its own.
 */
const WEBAPP: Array<{ name: string; weight: number; calls: (r: () => number) => StoryCall[] }> = [
  { name: 'get', weight: 50, calls: (r) => [0, 1, 2].map(() => ({ operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000 })) },
  {
    name: 'get-missing',
    weight: 10,
    calls: (r) => [
      { operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000 },
      { operation: 'GetOrder', id: `ord-9${String(Math.floor(r() * 1e5)).padStart(5, '0')}`, deadlineMs: 1000 },
    ],
  },
  { name: 'list', weight: 15, calls: (r) => [{ operation: 'ListOrders', pageSize: 20, deadlineMs: 1000 }, { operation: 'GetOrder', id: fullOrderId(r), deadlineMs: 1000 }] },
  { name: 'create', weight: 25, calls: () => [{ operation: 'CreateOrder', deadlineMs: 2000 }] },
];

function pickWeighted<T extends { weight: number }>(items: readonly T[], r: () => number): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let at = r() * total;
  for (const item of items) if ((at -= item.weight) < 0) return item;
  return items[0]!;
}

export interface StoryOptions {
  /** The balancer in front of the pods' inbound sidecars: `http://host:port`. */
  serviceUrl: string;
  /** The back-office app's outbound sidecar: `http://host:port`. */
  outboundUrl: string;
  timeline: StoryTimeline;
  /** Storefront calls per second; default 30. */
  storefrontRps?: number;
  /** Back-office calls per second; default 8. */
  backofficeRps?: number;
  /** Web app pages per second (tRPC, one to three procedures each); default 3. */
  webappPps?: number;
  seed?: number;
}

/**
 * The regression of the story: the storefront's gRPC-Web calls take this much
 * longer in the app (as a browser's calls would behind a slow proxy), what
 * `rpcscope diagnose` names at the end of the run against REST, the baseline.
 */
export const GRPC_WEB_EXTRA_MS = 150;

function slowerGrpcWeb(client: StoryClient, protocol: StorefrontProtocol, call: StoryCall): StoryCall {
  if (client !== 'storefront' || protocol !== 'grpc_web' || call.operation === 'WatchOrders') return call;
  const asked = Number(call.headers?.[DELAY_HEADER] ?? 0);
  return { ...call, headers: { ...call.headers, [DELAY_HEADER]: String(asked + GRPC_WEB_EXTRA_MS) } };
}

/** A call due while this many are open is skipped, so a stalled fleet cannot pile calls up. */
const MAX_IN_FLIGHT = 64;

export function startStoryTraffic(opts: StoryOptions): StoryTraffic {
  const random = seededRandom(opts.seed ?? 13);
  const storefront: Record<StorefrontProtocol, StoryCaller> = {
    rest: restCaller(opts.serviceUrl),
    grpc: grpcCaller(opts.serviceUrl),
    connect: connectCaller(opts.serviceUrl),
    grpc_web: grpcWebCaller(opts.serviceUrl),
  };
  const backoffice = grpcCaller(opts.outboundUrl);
  const webapp = trpcCaller(opts.serviceUrl);
  const stopped = new AbortController();
  // Every call in flight listens to it.
  setMaxListeners(0, stopped.signal);
  const tallies: CallTally[] = [];
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  const since = (): number => performance.now() - started;

  let creates = 0;
  /** Every create carries a key of its own: the shadow's mirrored create then finds the order the pod made. */
  const keyed = (call: StoryCall): StoryCall => (call.operation === 'CreateOrder' ? { ...call, headers: { ...call.headers, [IDEMPOTENCY_HEADER]: `story-${++creates}` } } : call);
  const tally = (client: StoryClient, protocol: StoryProtocol, scenario: string, call: StoryCall, outcome: CallOutcome): void => {
    tallies.push({
      endedMs: Math.round(since()),
      client,
      protocol,
      operation: call.operation,
      scenario,
      code: outcome.code,
      pod: outcome.pod,
      deadline: GRPC_FAMILY.includes(protocol) && call.deadlineMs !== undefined,
    });
  };
  const track = (running: Promise<void>): void => {
    const tracked = running.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  };

  const launch = (client: StoryClient, protocol: StorefrontProtocol, scenario: Scenario): void => {
    const call = slowerGrpcWeb(client, protocol, keyed(scenario.call(random)));
    track((client === 'storefront' ? storefront[protocol] : backoffice).call(call, stopped.signal).then((outcome) => tally(client, protocol, scenario.name, call, outcome)));
  };

  const launchPage = (page: (typeof WEBAPP)[number]): void => {
    const calls = page.calls(random).map(keyed);
    track(webapp.page(calls, stopped.signal).then((outcomes) => outcomes.forEach((o, i) => tally('webapp', 'trpc', page.name, calls[i]!, o))));
  };

  const schedule = async (rps: number, next: () => void): Promise<void> => {
    const interval = 1000 / rps;
    for (let n = 0; ; n++) {
      const wait = n * interval - since();
      if (wait > 0) await sleep(wait, stopped.signal).catch(() => {});
      if (stopped.signal.aborted || since() >= opts.timeline.durationMs) return;
      if (inFlight.size < MAX_IN_FLIGHT) next();
    }
  };

  const pickProtocol = (): StorefrontProtocol => {
    const shares = protocolShares(since(), opts.timeline);
    return pickWeighted(STORY_PROTOCOLS.map((p) => ({ p, weight: shares[p] })), random).p;
  };

  const done = (async () => {
    await Promise.all([
      schedule(opts.storefrontRps ?? 30, () => {
        const protocol = pickProtocol();
        const scenarios = protocol === 'grpc' ? STOREFRONT : STOREFRONT.filter((s) => !s.grpcOnly);
        launch('storefront', protocol, pickWeighted(scenarios, random));
      }),
      schedule(opts.backofficeRps ?? 8, () => launch('backoffice', 'grpc', pickWeighted(BACKOFFICE, random))),
      schedule(opts.webappPps ?? 3, () => launchPage(pickWeighted(WEBAPP, random))),
    ]);
    await Promise.all(inFlight);
    for (const caller of [...Object.values(storefront), backoffice, webapp]) caller.close();
    return tallies;
  })();

  return { done, tallies: () => tallies, stop: () => stopped.abort() };
}

/** Calls per answering pod among `tallies` ended inside [from, to) ms, every pod of `pods` present. */
export function callsPerPod(tallies: readonly CallTally[], pods: readonly string[], window: [number, number], client?: StoryClient): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(pods.map((p) => [p, 0]));
  for (const t of tallies) {
    if (t.endedMs < window[0] || t.endedMs >= window[1] || (client !== undefined && t.client !== client)) continue;
    if (t.pod in out) out[t.pod]! += 1;
  }
  return out;
}

/** max / mean over the pods: 1 when even, N when one of N takes everything (the sidecar's and the rules' skew figure). */
export function maxOverMean(values: readonly number[]): number {
  const total = values.reduce((a, b) => a + b, 0);
  if (values.length === 0 || total === 0) return 0;
  return Math.max(...values) / (total / values.length);
}
