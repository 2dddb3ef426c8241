// HTTP/1.1 keep-alive agents toward upstreams, one per upstream address, with
// each socket they open reported as an upstream connection.
//
// Each endpoint's calls pass a gate (endpoint-gate.ts) before their request is made (request()),
// as Envoy's circuit breakers (max_connections 1024, max_pending_requests 1024)
// and undici's `connections` limit do: a call starts at once on a free keep-alive socket, or on a new
// connection while fewer than --upstream-max-connecting are being made and fewer
// than --upstream-max-connections calls are in flight; otherwise it waits, in
// order, for a socket to come free or a connection to be made. A burst of 1,000
// calls thus opens connections a slice at a time and the rest reuse them, where
// it used to open 1,000 at once and overflow the app's accept queue (Node's
// listen backlog is 511), some of them then failing on --connect-timeout. The
// wait is not connecting: --connect-timeout starts with the connection. Past
// --upstream-max-pending waiting calls, a call is answered UNAVAILABLE at once.
import http from 'node:http';
import type { Socket } from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord, Observer } from '../call/observer.ts';
import { now } from '../clock.ts';
import type { ConnectFailureLog } from './connect-failure-log.ts';
import { nodeHttps } from '../builtins.ts';
import { connectTimeout } from '../core/errors.ts';
import { EndpointGate, queueFull, type GateLimits, type Waiting } from './endpoint-gate.ts';
import type { H1Liveness } from './h1-liveness.ts';

/** The upstream connection record of each socket the agents open, kept beside the socket rather than on it. */
const upstreamConnections = new WeakMap<Socket, ConnectionRecord>();

export interface H1Limits extends GateLimits {
  /** A call found the queue full. */
  onQueueFull: () => void;
  /** Endpoints silent with calls waiting are looked into (outbound: pods on other nodes can vanish). */
  liveness?: H1Liveness;
}

const DEFAULT_LIMITS: H1Limits = { maxConnections: 1024, maxConnecting: 128, maxPending: 1024, onQueueFull: () => {} };

/** A call to an endpoint, waiting at its gate or sent. */
export interface H1Call {
  /** The caller went away: a waiting call leaves the queue, a sent one's request is destroyed. */
  destroy(): void;
}

export interface H1CallHandlers {
  /** The call passed the gate: its request, made now, for the caller to write and listen to. */
  sent(req: http.ClientRequest): void;
  /** It never will (its queue was full, QUEUE_FULL, or its endpoint left while it waited); on a later tick. */
  failed(err: Error): void;
}

/** Whether the agent holds a keep-alive socket waiting for a request (documented as read-only). */
function hasFreeSocket(agent: http.Agent): boolean {
  for (const name in agent.freeSockets) if ((agent.freeSockets[name]?.length ?? 0) > 0) return true;
  return false;
}

/**
 * Idle keep-alive connections to the app are closed after this long: below the shortest common
 * keep-alive timeouts (Node's `server.keepAliveTimeout` and Apache's `KeepAliveTimeout`, 5 s;
 * nginx 75 s, Go's net/http none), so the app never closes one as a call is written onto it.
 */
export const IDLE_UPSTREAM_SOCKET_MS = 4000;

export class H1AgentPool {
  private readonly agents = new Map<string, http.Agent>();
  private readonly gates = new Map<string, EndpointGate<never>>();
  private readonly ca: Buffer | undefined;

  constructor(
    private readonly observer: Observer,
    private readonly connectTimeoutMs: number,
    /** The --upstream-ca bundle, read once at start (pipeline.ts). */
    ca: Buffer | undefined,
    private readonly nextConnId: () => number,
    private readonly connectFailures: ConnectFailureLog,
    private readonly limits: H1Limits = DEFAULT_LIMITS,
  ) {
    this.ca = ca;
  }

  /**
   * Sends a call to the endpoint once its gate admits it: `http.request()` is made only then,
   * with the endpoint's agent, so the agent never holds a call the gate has not let through.
   */
  request(target: UpstreamUrl, options: http.RequestOptions, handlers: H1CallHandlers): H1Call {
    const { agent, gate } = this.endpoint(target);
    // The everyday case, a socket free or one to make and nobody waiting: the request is made
    // now, with nothing kept for a wait that will not happen. Allocating the waiting call's
    // closures on every call cost the REST path 4x its garbage collection (test/bench/relay.ts).
    if (gate.free()) return this.start(target, options, agent, gate, handlers);
    let cancelled = false;
    let req: http.ClientRequest | undefined;
    const call: Waiting<never> = {
      get cancelled() {
        return cancelled;
      },
      start: () => {
        req = this.start(target, options, agent, gate, handlers);
      },
      fail: (err) => {
        req?.destroy();
        process.nextTick(() => {
          if (!cancelled) handlers.failed(err);
        });
      },
    };
    if (!gate.admit(call)) {
      this.limits.onQueueFull();
      call.fail(queueFull(target.authority, this.limits));
    }
    return {
      destroy: () => {
        cancelled = true;
        req?.destroy();
      },
    };
  }

  /** Makes the call's request, counted in flight at its gate until it closes. */
  private start(target: UpstreamUrl, options: http.RequestOptions, agent: http.Agent, gate: EndpointGate<never>, handlers: H1CallHandlers): http.ClientRequest {
    const req = (target.tls ? nodeHttps() : http).request({ ...options, agent });
    gate.inFlight++;
    req.once('close', () => {
      gate.inFlight--;
      gate.drain();
    });
    handlers.sent(req);
    return req;
  }

  /** The endpoint's agent and gate, made on its first call. */
  private endpoint(target: UpstreamUrl): { agent: http.Agent; gate: EndpointGate<never> } {
    const known = this.agents.get(target.href);
    const knownGate = this.gates.get(target.href);
    if (known && knownGate) return { agent: known, gate: knownGate };
    // noDelay: an answer written as head then body would otherwise wait for the peer's delayed ACK (~40 ms).
    // timeout: the agent closes a socket idle that long (or for the app's `Keep-Alive: timeout=`, if
    // shorter), so no call is written onto a connection the app is closing at that very moment.
    // maxSockets: the gate keeps calls in flight within it, so the agent never queues a call itself.
    const opts = { keepAlive: true, scheduling: 'lifo' as const, noDelay: true, timeout: IDLE_UPSTREAM_SOCKET_MS, maxSockets: this.limits.maxConnections };
    const agent = target.tls ? new (nodeHttps().Agent)({ ...opts, ca: this.ca, ALPNProtocols: ['http/1.1'] }) : new http.Agent(opts);
    const gate = new EndpointGate<never>(this.limits, () => hasFreeSocket(agent));
    // createConnection is the method Node documents for custom agents to override: each
    // socket gets the connect timeout and is tracked as an upstream connection.
    const create = agent.createConnection.bind(agent);
    agent.createConnection = (options, cb) => {
      const socket = create({ ...options, timeout: this.connectTimeoutMs }, cb) as Socket;
      this.track(socket, target, gate);
      return socket;
    };
    // After the agent's own 'free' listener has put the socket back among the free ones.
    agent.on('free', () => gate.drain());
    this.agents.set(target.href, agent);
    this.gates.set(target.href, gate);
    this.limits.liveness?.watch(target, agent, () => gate.inFlight > 0);
    return { agent, gate };
  }

  /** The upstream connection record of the socket a request went out on. */
  static connectionOf(socket: Socket | null | undefined): ConnectionRecord | undefined {
    return socket ? upstreamConnections.get(socket) : undefined;
  }

  private track(socket: Socket, target: UpstreamUrl, gate: EndpointGate<never>): void {
    const conn: ConnectionRecord = { id: this.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: now(), closeTime: 0, calls: 0, active: 0 };
    upstreamConnections.set(socket, conn);
    let opened = false;
    const made = gate.connectStarted();
    socket.once(target.tls ? 'secureConnect' : 'connect', () => {
      opened = true;
      socket.setTimeout(0);
      this.observer.connectionOpened(conn);
      made();
    });
    socket.once('close', made);
    socket.once('timeout', () => {
      if (!opened) socket.destroy(connectTimeout(this.connectTimeoutMs));
    });
    socket.once('error', (err) => {
      if (!opened) this.connectFailures.report(target.authority, err);
    });
    socket.once('close', () => {
      if (!opened) return;
      conn.closeTime = now();
      this.observer.connectionClosed(conn);
    });
  }

  /** An endpoint is gone: close its idle sockets now, the busy ones when their calls end. */
  closeTarget(target: UpstreamUrl): void {
    const agent = this.agents.get(target.href);
    if (!agent) return;
    this.agents.delete(target.href);
    this.limits.liveness?.forget(target);
    this.gates.get(target.href)?.abandon(target.authority);
    this.gates.delete(target.href);
    agent.destroy();
  }

  close(): void {
    this.limits.liveness?.close();
    for (const [href, gate] of this.gates) gate.abandon(href);
    for (const agent of this.agents.values()) agent.destroy();
  }
}
