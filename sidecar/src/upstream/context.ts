// What both data planes need, built once at start by the pipeline: the relay
// and the terminating forwarders read it alike, so it sits below both.
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Logger } from '../log.ts';
import type { Upstreams } from './balancer/upstreams.ts';
import type { Router } from '../route/router.ts';
import type { CallTracing } from '../call/call-tracing.ts';
import type { Faults } from '../call/faults.ts';
import type { Observer } from '../call/observer.ts';
import type { ConnectFailureLog } from './connect-failure-log.ts';
import type { GateLimits } from './endpoint-gate.ts';
import type { H1AgentPool } from './h1-agent-pool.ts';
import type { H2SessionPool } from './h2-session-pool.ts';
import type { UpstreamProtocols } from './upstream-protocol.ts';
import type { UpstreamRetries } from './upstream-retries.ts';
import type { Inbound } from '../call/inbound.ts';
import type { CallsInFlight } from '../call/calls-in-flight.ts';
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Protocol } from '../protocol/vocabulary.ts';

/**
 * The settings the forwarders, the relay and the translating paths read, picked
 * out of the whole Config by the pipeline: a new setting a data plane needs is
 * added here, on purpose.
 */
export interface DataPlaneSettings {
  readonly mode: 'inbound' | 'outbound';
  readonly upstream: UpstreamUrl;
  readonly grpcUpstream: UpstreamUrl | undefined;
  readonly connectTimeoutMs: number;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly trpcPrefix: string;
  readonly enforceDeadlines: boolean;
  /** --upstream-max-connections, --upstream-max-connecting and --upstream-max-pending, per HTTP/1.1 endpoint. */
  readonly h1Limits: GateLimits;
}

export interface ProxyContext {
  readonly config: DataPlaneSettings;
  readonly observer: Observer;
  readonly tracing: CallTracing;
  readonly log: Logger;
  /** Faults contained at the connection and call boundaries, and connections cut. */
  readonly faults: Faults;
  readonly h2: H2SessionPool;
  readonly h1: H1AgentPool;
  /** The HTTP version each upstream endpoint speaks. */
  readonly protocols: UpstreamProtocols;
  readonly upstreams: Upstreams;
  /** Resolves each call's route once, as it starts (Call). */
  readonly router: Router;
  /** Attempts the upstream refused unprocessed, sent again. */
  readonly retries: UpstreamRetries;
  /** Calls in flight, for the drain to wait on. */
  readonly inflight: CallsInFlight;
  nextCallId(): number;
  /** Calls that leave the plain proxy for a translating path (--transcode); undefined when none does. */
  readonly translating?: Translating;
  /** Ids for connections, downstream and upstream alike. */
  nextConnId(): number;
  /** One warn line per unreachable upstream, whichever path (pools, relay) failed to connect. */
  readonly connectFailures: ConnectFailureLog;
  /** The --upstream-ca bundle, read once at start. */
  readonly upstreamCa: Buffer | undefined;
}

/**
 * A stage before the plain forwarders (transcode/hand-off.ts: REST transcoding,
 * the gRPC-Web bridge, CORS preflights, the mirror): each method answers true
 * when it took the call, whose caller it then answers itself. Declared here,
 * below the forwarders that ask it, so that the proxy depends on no translating path.
 */
export interface Translating {
  h1(ctx: ProxyContext, arrived: Inbound, req: http.IncomingMessage, res: http.ServerResponse): boolean;
  h2(ctx: ProxyContext, arrived: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): boolean;
  /**
   * Whether a call of this protocol, method and path (query and all) may be
   * taken here, asked before it is a call and counting nothing: the HTTP/1.1
   * relay, which cannot translate, hands such a call's connection to the
   * terminating path. A call of an operation --split names answers true
   * whichever side its share sends it to.
   */
  wouldTake(protocol: Protocol, method: string, path: string): boolean;
}
