// The sidecar assembled, top to bottom: listen -> protocol -> route -> proxy ->
// observe, the upstreams calls go to (the app, or balanced endpoints), and the
// admin port. Reading this file tells what runs and in what order.
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminServer, listenAdmin } from './admin/admin-server.ts';
import { createConnectionsView } from './admin/connections-view.ts';
import { EwmaPicker } from './balancer/picker-ewma.ts';
import { LeastRequestPicker } from './balancer/picker-least-request.ts';
import { RoundRobinPicker } from './balancer/picker-round-robin.ts';
import { StickyPicker } from './balancer/picker-sticky.ts';
import type { Picker } from './balancer/picker.ts';
import { dnsResolver, staticResolver } from './balancer/resolver.ts';
import { BalancedUpstreams, fixedUpstreams, type Upstreams } from './balancer/upstreams.ts';
import type { Config } from './config/load.ts';
import { ProxyListener } from './listen/listener.ts';
import type { Logger } from './log.ts';
import type { CallTracing } from './observe/call-tracing.ts';
import { Faults } from './observe/faults.ts';
import { composeObservers, type Observer } from './observe/observer.ts';
import type { ProxyContext } from './proxy/context.ts';
import { FORWARDERS, type Forwarders } from './proxy/forwarders.ts';
import { ConnectFailureLog } from './proxy/connect-failure-log.ts';
import { H1AgentPool } from './proxy/h1-agent-pool.ts';
import { H2SessionPool } from './proxy/h2-session-pool.ts';
import { UpstreamProtocols } from './proxy/upstream-protocol.ts';
import { probeUpstreamSpeaks } from './proxy/upstream-protocol-probe.ts';
import { UpstreamRetries } from './proxy/upstream-retries.ts';
import { createTranslating } from './transcode/hand-off.ts';

export interface Sidecar {
  proxyAddress: AddressInfo;
  adminAddress: AddressInfo;
  /** Fail readiness, serve on for the drain delay, then stop accepting, GOAWAY, wait up to the drain timeout for calls in flight, and close. */
  drain(): Promise<{ unfinished: number }>;
}

/** What observes the calls: built once the endpoints' source is known. */
export interface Observation {
  observers: Observer[];
  tracing: CallTracing;
  adminHandlers: Map<string, http.RequestListener>;
  /** Families served on /metrics after the call metrics (the translation metrics). */
  addMetrics?(render: (openMetrics: boolean) => string): void;
  shutdown(): Promise<void>;
}

export type ObservationFactory = (knownEndpoints: () => readonly string[], faults: Faults) => Observation;

/** Parts a test may replace, e.g. to inject a fault; the real ones by default. */
export interface SidecarParts {
  forwarders?: Forwarders;
}

const PICKERS: Record<Config['balance'], () => Picker> = {
  round_robin: () => new RoundRobinPicker(),
  least_request: () => new LeastRequestPicker(),
  ewma: () => new EwmaPicker(),
  sticky: () => new StickyPicker(),
};

function createUpstreams(config: Config, log: Logger, retire: BalancedUpstreams['opts']['retire']): Upstreams {
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
  });
}

export async function startSidecar(config: Config, log: Logger, observe: ObservationFactory, parts: SidecarParts = {}): Promise<Sidecar> {
  let callIds = 0;
  let connIds = 0;
  const nextConnId = (): number => ++connIds;

  const retire: BalancedUpstreams['opts']['retire'] = (target) => {
    h2.closeTarget(target);
    h1.closeTarget(target);
  };
  const upstreams = createUpstreams(config, log, retire);
  const faults = new Faults(log);
  const observation = observe(() => upstreams.known(), faults);
  const connections = createConnectionsView();
  const observer = composeObservers([...observation.observers, upstreams.observer, connections.observer], (err) => faults.internalError('observer', err));
  const connectFailures = new ConnectFailureLog(log);
  const h2 = new H2SessionPool(observer, log, config.connectTimeoutMs, config.upstreamCa, nextConnId, connectFailures);
  const h1 = new H1AgentPool(observer, config.connectTimeoutMs, config.upstreamCa, nextConnId, connectFailures, {
    maxConnections: config.upstreamMaxConnections,
    maxConnecting: config.upstreamMaxConnecting,
    maxPending: config.upstreamMaxPending,
    onQueueFull: () => faults.upstreamQueueFull(),
  });
  const probe = { connectTimeoutMs: config.connectTimeoutMs, ca: config.upstreamCa ? readFileSync(config.upstreamCa) : undefined };
  const protocols = new UpstreamProtocols(
    { upstream: config.upstreamProtocol, grpcUpstream: config.grpcUpstream ? config.grpcUpstreamProtocol : undefined },
    (target, version) => probeUpstreamSpeaks(target, version, probe),
    log,
  );

  const ctx: ProxyContext = {
    config,
    observer,
    tracing: observation.tracing,
    log,
    faults,
    h2,
    h1,
    protocols,
    upstreams,
    retries: new UpstreamRetries(),
    inflight: new Set(),
    nextCallId: () => ++callIds,
    translating: createTranslating(config, log),
    nextConnId,
    connectFailures,
  };

  observation.addMetrics?.((openMetrics) => ctx.retries.render(openMetrics));
  const translating = ctx.translating;
  if (translating) observation.addMetrics?.((openMetrics) => translating.metrics.render(openMetrics));
  const shadow = translating?.shadow;
  if (shadow) observation.addMetrics?.((openMetrics) => shadow.render(openMetrics));

  await upstreams.start();
  const listener = new ProxyListener(ctx, nextConnId, parts.forwarders ?? FORWARDERS);
  let draining = false;
  let listening = false;
  // --debug-endpoints false: the admin port says nothing about who is connected.
  const adminHandlers = new Map([...observation.adminHandlers, ...(config.debugEndpoints ? [['/debug/connections', connections.handler] as const] : [])]);
  const admin = createAdminServer({ ready: () => listening && !draining, handlers: adminHandlers, onFault: (err) => faults.internalError('admin', err) });
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
      while (ctx.inflight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const unfinished = ctx.inflight.size;
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
