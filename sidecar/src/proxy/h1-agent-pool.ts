// HTTP/1.1 keep-alive agents toward upstreams, one per upstream address, with
// each socket they open reported as an upstream connection.
import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord, Observer } from '../observe/observer.ts';
import { now } from '../clock.ts';
import type { ConnectFailureLog } from './connect-failure-log.ts';

const UPSTREAM_CONN = Symbol('rpcscope.upstreamConnection');
type TrackedSocket = Socket & { [UPSTREAM_CONN]?: ConnectionRecord };

/**
 * Idle keep-alive connections to the app are closed after this long: below the shortest common
 * keep-alive timeouts (Node's `server.keepAliveTimeout` and Apache's `KeepAliveTimeout`, 5 s;
 * nginx 75 s, Go's net/http none), so the app never closes one as a call is written onto it.
 */
export const IDLE_UPSTREAM_SOCKET_MS = 4000;

export class H1AgentPool {
  private readonly agents = new Map<string, http.Agent>();
  private readonly ca: Buffer | undefined;

  constructor(
    private readonly observer: Observer,
    private readonly connectTimeoutMs: number,
    caFile: string | undefined,
    private readonly nextConnId: () => number,
    private readonly connectFailures: ConnectFailureLog,
  ) {
    this.ca = caFile ? readFileSync(caFile) : undefined;
  }

  get(target: UpstreamUrl): http.Agent {
    let agent = this.agents.get(target.href);
    if (!agent) {
      // noDelay: an answer written as head then body would otherwise wait for the peer's delayed ACK (~40 ms).
      // timeout: the agent closes a socket idle that long (or for the app's `Keep-Alive: timeout=`, if
      // shorter), so no call is written onto a connection the app is closing at that very moment.
      const opts = { keepAlive: true, scheduling: 'lifo' as const, noDelay: true, timeout: IDLE_UPSTREAM_SOCKET_MS };
      agent = target.tls ? new https.Agent({ ...opts, ca: this.ca, ALPNProtocols: ['http/1.1'] }) : new http.Agent(opts);
      const create = agent.createConnection.bind(agent);
      agent.createConnection = (options, cb) => {
        const socket = create({ ...options, timeout: this.connectTimeoutMs }, cb) as TrackedSocket;
        this.track(socket, target);
        return socket;
      };
      this.agents.set(target.href, agent);
    }
    return agent;
  }

  /** The upstream connection record of the socket a request went out on. */
  static connectionOf(socket: Socket | null | undefined): ConnectionRecord | undefined {
    return (socket as TrackedSocket | null | undefined)?.[UPSTREAM_CONN];
  }

  private track(socket: TrackedSocket, target: UpstreamUrl): void {
    const conn: ConnectionRecord = { id: this.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: now(), closeTime: 0, calls: 0, active: 0 };
    socket[UPSTREAM_CONN] = conn;
    let opened = false;
    socket.once(target.tls ? 'secureConnect' : 'connect', () => {
      opened = true;
      socket.setTimeout(0);
      this.observer.connectionOpened(conn);
    });
    socket.once('timeout', () => {
      if (!opened) socket.destroy(Object.assign(new Error(`connect timeout after ${this.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' }));
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
    agent.destroy();
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }
}
