// The sidecar assembled. A call meets these stages, in this order, and this
// file lists them in the same order (as linkerd2-proxy's inbound stack reads):
//
//   accept     listen/listener.ts        TCP or TLS connections, their budgets and timeouts
//   detect     listen/sniff.ts           HTTP/1.1 or HTTP/2, from ALPN or the first bytes
//   relay      relay/                    inbound HTTP/2 (--data-plane relay): frames passed
//                                        through to one upstream connection per client connection
//   balanced   relay-balanced/           outbound HTTP/2 (--outbound-data-plane relay): each
//                                        call's frames mapped onto a pooled endpoint connection
//   relay-h1   relay-h1/                 inbound HTTP/1.1 (--http1-data-plane relay): heads and
//                                        bodies passed as bytes to one upstream connection each
//   terminate  proxy/, transcode/        everything else: each call forwarded on its own
//                                        (node:http2, node:http), translated or mirrored
//   call       call/call.ts              each call's one start and one end, its record
//   route      route/router.ts           each call's route, resolved once as it starts
//   upstream   upstream/                 its endpoint (upstream/balancer/, told when the
//                                        call ends), pools, retries, shared by both planes
//   observe    observe/                  metrics, traces, access log, connection view
//
// Each stage hands calls to the next, so startSidecar (at the end) builds them
// from the last back to the first, then opens the admin port and the proxy port.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createAdminServer, listenAdmin } from './admin/admin-server.ts';
import { AdminAuth } from './admin/admin-auth.ts';
import { createConnectionsView, type ConnectionsView } from './admin/connections-view.ts';
import { createTap, type Tap } from './admin/tap.ts';
import { EwmaPicker } from './upstream/balancer/picker-ewma.ts';
import { LeastRequestPicker } from './upstream/balancer/picker-least-request.ts';
import { RoundRobinPicker } from './upstream/balancer/picker-round-robin.ts';
import { StickyPicker } from './upstream/balancer/picker-sticky.ts';
import type { Picker } from './upstream/balancer/picker.ts';
import { connectProbe } from './upstream/balancer/connect-probe.ts';
import { dnsResolver, staticResolver } from './upstream/balancer/resolver.ts';
import { BalancedUpstreams, fixedUpstreams, type Upstreams } from './upstream/balancer/upstreams.ts';
import type { Config } from './config/load.ts';
import { ProxyListener, type H2Relays, type ListenSettings } from './listen/listener.ts';
import { relayApplies } from './relay/relay-applies.ts';
import { RelaySet } from './relay/relay-set.ts';
import { balancedRelayApplies } from './relay-balanced/balanced-applies.ts';
import { BalancedRelaySet } from './relay-balanced/balanced-relay-set.ts';
import { h1RelayApplies } from './relay-h1/h1-relay-applies.ts';
import type { Logger } from './log.ts';
import { Faults } from './call/faults.ts';
import { CallsInFlight } from './call/calls-in-flight.ts';
import type { Observation, ObservationFactory } from './observe/observation.ts';
import { composeObservers, type Observer } from './call/observer.ts';
import type { DataPlaneSettings, ProxyContext } from './upstream/context.ts';
import { FORWARDERS, type Forwarders } from './proxy/forwarders.ts';
import { ConnectFailureLog } from './upstream/connect-failure-log.ts';
import { H1AgentPool } from './upstream/h1-agent-pool.ts';
import { H1Liveness } from './upstream/h1-liveness.ts';
import { H2SessionPool } from './upstream/h2-session-pool.ts';
import { UpstreamProtocols } from './upstream/upstream-protocol.ts';
import { probeUpstreamSpeaks } from './upstream/upstream-protocol-probe.ts';
import { UpstreamRetries } from './upstream/upstream-retries.ts';
import { Router } from './route/router.ts';
import { createTranslating } from './transcode/hand-off.ts';
import { loadStartFiles, type StartFiles } from './config/start-files.ts';

export interface Sidecar {
  proxyAddress: AddressInfo;
  adminAddress: AddressInfo;
  /** Fail readiness, serve on for the drain delay, then stop accepting, GOAWAY, wait up to the drain timeout for calls in flight, and close. */
  drain(): Promise<{ unfinished: number }>;
}

/** What observes the calls: built once the endpoints' source is known. */
export type { Observation, ObservationFactory } from './observe/observation.ts';

/** Parts a test may replace, e.g. to inject a fault; the real ones by default. */
export interface SidecarParts {
  forwarders?: Forwarders;
  /** The files the settings name, as main.ts read them before anything listened; read here when not given. */
  files?: StartFiles;
}

// ── accept → detect ─────────────────────────────────────────────────────────
// The listener accepts each connection (plain or TLS), enforces the connection
// budgets and timeouts, tells HTTP/1.1 from HTTP/2, and hands the connection to
// the relay or the terminating server (listen/listener.ts).
function accept(ctx: ProxyContext, config: Config, forwarders: Forwarders, relays: H2Relays | undefined): ProxyListener {
  const { tlsCert, tlsKey, maxConnections, firstByteTimeoutMs, requestHeadersTimeoutMs, idleTimeoutMs, keepaliveIntervalMs, keepaliveTimeoutMs, maxConnectionAgeMs, maxConnectionAgeGraceMs } = config;
  const settings: ListenSettings = {
    tlsCert,
    tlsKey,
    maxConnections,
    firstByteTimeoutMs,
    requestHeadersTimeoutMs,
    idleTimeoutMs,
    keepaliveIntervalMs,
    keepaliveTimeoutMs,
    maxConnectionAgeMs,
    maxConnectionAgeGraceMs,
    relays,
    http1Relay: h1RelayApplies(config),
  };
  return new ProxyListener(ctx, settings, forwarders);
}

// The settings the data planes read: the forwarders, the relay and the
// translating paths see these, never the whole Config.
function dataPlaneSettings(config: Config): DataPlaneSettings {
  const { mode, upstream, grpcUpstream, connectTimeoutMs, keepaliveIntervalMs, keepaliveTimeoutMs, trpcPrefix, enforceDeadlines } = config;
  const h1Limits = { maxConnections: config.upstreamMaxConnections, maxConnecting: config.upstreamMaxConnecting, maxPending: config.upstreamMaxPending };
  return { mode, upstream, grpcUpstream, connectTimeoutMs, keepaliveIntervalMs, keepaliveTimeoutMs, trpcPrefix, enforceDeadlines, h1Limits };
}

// ── relay | terminate ───────────────────────────────────────────────────────
// Relay: an inbound HTTP/2 connection under --data-plane relay, when nothing
// needs a call of its own upstream (relay/relay-applies.ts), goes frame for frame
// to its own upstream connection; the listener chooses per connection.
// Terminate: every other call is forwarded on its own, over pooled upstream
// sessions (HTTP/2) or agents (HTTP/1.1), in the version each endpoint speaks.
interface Terminating {
  h2: H2SessionPool;
  h1: H1AgentPool;
  protocols: UpstreamProtocols;
  connectFailures: ConnectFailureLog;
}

function terminating(config: Config, log: Logger, observer: Observer, nextConnId: () => number, faults: Faults, upstreams: Upstreams, upstreamCa: Buffer | undefined): Terminating {
  const connectFailures = new ConnectFailureLog(log);
  // Upstream sessions are PINGed in outbound mode, where endpoints are pods on other nodes that can vanish;
  // an inbound sidecar's app shares its pod, whose death the kernel reports at once, and gRPC servers' ping
  // policies (grpc-go, C-core: no more than one every 5 minutes) would answer PINGs with ENHANCE_YOUR_CALM.
  const { keepaliveIntervalMs: intervalMs, keepaliveTimeoutMs: timeoutMs } = config;
  const onTimeout = (href: string): void => {
    faults.keepaliveTimedOut('upstream');
    upstreams.keepaliveTimedOut(href);
  };
  const h2 = new H2SessionPool(observer, log, config.connectTimeoutMs, upstreamCa, nextConnId, connectFailures, {
    tcpIdleMs: intervalMs,
    ping: config.mode === 'outbound' ? { intervalMs, timeoutMs } : undefined,
    onTimeout,
  });
  // HTTP/1.1 has one call per connection: a burst of calls connects a slice at a time and queues, within limits.
  const h1 = new H1AgentPool(observer, config.connectTimeoutMs, upstreamCa, nextConnId, connectFailures, {
    maxConnections: config.upstreamMaxConnections,
    maxConnecting: config.upstreamMaxConnecting,
    maxPending: config.upstreamMaxPending,
    onQueueFull: () => faults.upstreamQueueFull(),
    // HTTP/1.1 has no PING: in outbound mode an endpoint silent with calls waiting is probed with a TCP connect.
    liveness: config.mode === 'outbound' && intervalMs > 0 ? new H1Liveness({ intervalMs, timeoutMs, probe: connectProbe, onTimeout }) : undefined,
  });
  const probe = { connectTimeoutMs: config.connectTimeoutMs, ca: upstreamCa };
  const protocols = new UpstreamProtocols(
    { upstream: config.upstreamProtocol, grpcUpstream: config.grpcUpstream ? config.grpcUpstreamProtocol : undefined },
    (target, version) => probeUpstreamSpeaks(target, version, probe),
    log,
  );
  return { h2, h1, protocols, connectFailures };
}

// ── route ───────────────────────────────────────────────────────────────────
// Each call's route (its `method` and `operation` labels, its shape) is resolved
// once as it starts, on either data plane (call/call.ts), with the router of the
// routes, operations and .proto files, built once, here; metrics, span names and
// the access log read the route off the call record.
function router(config: Config, files: StartFiles): Router {
  return new Router({ maxMethods: config.maxMethods, routes: files.routes, operations: files.operations, protos: files.protos });
}

// Then its upstream: the app (inbound; the gRPC family may go to --grpc-upstream),
// or an endpoint of the upstream service picked per call (outbound). The pick
// carries its own onCallEnded: the balancer hears of call ends from there.
const PICKERS: Record<Config['balance'], () => Picker> = {
  round_robin: () => new RoundRobinPicker(),
  least_request: () => new LeastRequestPicker(),
  ewma: () => new EwmaPicker(),
  sticky: () => new StickyPicker(),
};

function createUpstreams(config: Config, log: Logger, retire: BalancedUpstreams['opts']['retire'], faults: Faults): Upstreams {
  if (config.mode === 'inbound') return fixedUpstreams(config.upstream, config.grpcUpstream);
  const { upstream, endpoints, dnsServer } = config;
  const dns = dnsServer ? `${dnsServer.host.includes(':') ? `[${dnsServer.host}]` : dnsServer.host}:${dnsServer.port}` : undefined;
  return new BalancedUpstreams({
    upstream,
    resolver: endpoints ? staticResolver(endpoints) : dnsResolver(upstream.host, upstream.port, dns),
    picker: PICKERS[config.balance](),
    resolveIntervalMs: config.resolveIntervalMs,
    log,
    retire,
    // An ejected endpoint returns once a connection to it can be made again (upstream/balancer/outlier-ejection.ts).
    probe: (target) => connectProbe(target, config.connectTimeoutMs),
    onEjected: (reason) => faults.endpointEjected(reason),
  });
}

// ── observe ─────────────────────────────────────────────────────────────────
// Every stage reports calls, connections and GOAWAYs to one observer: the
// observation's (metrics, access log), the balancer's (downstream connection
// closes, for the sticky picker), the connection view and the tap (which costs
// a call nothing while nobody watches); an observer's fault is counted and
// contained, never the call's.
interface Observing {
  observation: Observation;
  connections: ConnectionsView;
  tap: Tap;
  observer: Observer;
}

function observing(observe: ObservationFactory, upstreams: Upstreams, faults: Faults, router: Router): Observing {
  const observation = observe(() => upstreams.known(), faults, router);
  const connections = createConnectionsView(() => upstreams.describe());
  const tap = createTap();
  const observer = composeObservers([...observation.observers, upstreams.observer, connections.observer, tap.observer], (err) => faults.internalError('observer', err));
  return { observation, connections, tap, observer };
}

// ── assembly ────────────────────────────────────────────────────────────────
export async function startSidecar(config: Config, log: Logger, observe: ObservationFactory, parts: SidecarParts = {}): Promise<Sidecar> {
  let callIds = 0;
  let connIds = 0;
  const nextConnId = (): number => ++connIds;

  // From the last stage back: upstreams and observation, the terminating pools, the context every call shares.
  const retire: BalancedUpstreams['opts']['retire'] = (target) => {
    h2.closeTarget(target);
    h1.closeTarget(target);
    balanced?.closeTarget(target);
  };
  const faults = new Faults(log);
  const upstreams = createUpstreams(config, log, retire, faults);
  faults.ejectedNow = () => upstreams.ejectedCount();
  const files = parts.files ?? loadStartFiles(config);
  const routes = router(config, files);
  const { observation, connections, tap, observer } = observing(observe, upstreams, faults, routes);
  // The --upstream-ca bundle, read once here for every path that connects upstream over TLS.
  const upstreamCa = config.upstreamCa ? readFileSync(config.upstreamCa) : undefined;
  const { h2, h1, protocols, connectFailures } = terminating(config, log, observer, nextConnId, faults, upstreams, upstreamCa);

  const translating = createTranslating(config, log, upstreamCa, files.transcode);
  const ctx: ProxyContext = {
    config: dataPlaneSettings(config),
    observer,
    tracing: observation.tracing,
    log,
    faults,
    h2,
    h1,
    protocols,
    upstreams,
    router: routes,
    retries: new UpstreamRetries(),
    inflight: new CallsInFlight(),
    nextCallId: () => ++callIds,
    translating,
    nextConnId,
    connectFailures,
    upstreamCa,
  };

  // The retry, translation and mirror counters are served after the call metrics.
  observation.addMetrics?.(ctx.retries.families);
  if (translating) observation.addMetrics?.(translating.metrics.families);
  const shadow = translating?.shadow;
  if (shadow) observation.addMetrics?.(shadow.families);

  // The HTTP/2 relay, when one applies: frames passed 1:1 (inbound), or mapped per call onto pooled endpoint connections (outbound).
  const balanced = balancedRelayApplies(config) ? new BalancedRelaySet(ctx) : undefined;
  const relays: H2Relays | undefined = balanced ?? (relayApplies(config) ? new RelaySet(ctx) : undefined);

  await upstreams.start();
  const listener = accept(ctx, config, parts.forwarders ?? FORWARDERS, relays);
  let draining = false;
  let listening = false;
  // --debug-endpoints false: the admin port says nothing about who is connected or what they call.
  const debugHandlers = [['/debug/connections', connections.handler], ['/debug/tap', tap.handler]] as const;
  const adminHandlers = new Map([...observation.adminHandlers, ...(config.debugEndpoints ? debugHandlers : [])]);
  // /debug/* answers loopback callers and holders of --admin-token-file's token; /metrics and the probes stay open.
  const auth = new AdminAuth(config.adminTokenFile);
  observation.addMetrics?.(auth.families);
  const admin = createAdminServer({ ready: () => listening && !draining, handlers: adminHandlers, admitDebug: (req, res) => auth.admit(req, res), onFault: (err) => faults.internalError('admin', err) });
  const adminAddress = await listenAdmin(admin, config.admin);
  const proxyAddress = await listener.listen(config.listen);
  listening = true;

  return {
    proxyAddress,
    adminAddress,
    async drain() {
      draining = true;
      // Readiness fails now, but the pod's endpoint takes a while to leave
      // kube-proxy's rules and other clients' balancers: calls still arrive
      // and are served as usual until the delay is over.
      if (config.drainDelayMs > 0) await new Promise((r) => setTimeout(r, config.drainDelayMs));
      const accepting = listener.drain();
      const deadline = Date.now() + config.drainTimeoutMs;
      // Relayed connections are waited for too: between a drain's two GOAWAYs a client may still open streams.
      while ((ctx.inflight.count > 0 || listener.relaysSettling > 0) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const unfinished = ctx.inflight.count;
      listener.destroy();
      await accepting;
      upstreams.stop();
      h2.close();
      h1.close();
      shadow?.close();
      const adminClosed = new Promise<void>((resolve) => admin.close(() => resolve()));
      // A scraper's keep-alive connection (Prometheus comes back every interval) never
      // idles long enough for close() alone to finish, which would hold the exit past
      // --drain-timeout; the drain is over, so end it.
      admin.closeAllConnections();
      await adminClosed;
      await observation.shutdown();
      return { unfinished };
    },
  };
}
