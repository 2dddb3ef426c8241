// HTTP/1.1 has no PING. An upstream endpoint whose HTTP/1.1 connections carry
// calls and have read nothing for --keepalive-interval may be a pod that
// vanished (its node down, a partition: no FIN, no RST), or an app that is only
// slow. The watch tells the two apart without risking a call: a TCP connection
// to the same endpoint, made within --keepalive-timeout, proves the host is
// there (a busy app's kernel still completes the handshake); none made means it
// is gone. Its connections are then closed with RPCSCOPE_ERR_KEEPALIVE_TIMEOUT,
// so the calls on them end UNAVAILABLE (REST: 503) at once instead of waiting
// for their deadline, and the balancer ejects the endpoint, as an unanswered
// PING does on HTTP/2.
//
// Cost: one timer per pool, and per tick a sum of `bytesRead` over the busy
// endpoints' sockets; a probe only where an endpoint has been silent a whole
// interval with calls waiting (a long poll costs one TCP handshake an interval).
import type http from 'node:http';
import type { Socket } from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export interface H1LivenessOptions {
  /** --keepalive-interval: silence this long, with calls waiting, is looked into. */
  readonly intervalMs: number;
  /** --keepalive-timeout: the probe's connection must be made within it. */
  readonly timeoutMs: number;
  /** A TCP connection to `target` made within `timeoutMs`, or not. */
  readonly probe: (target: UpstreamUrl, timeoutMs: number) => Promise<boolean>;
  /** The endpoint was found gone and its connections closed. */
  readonly onTimeout: (href: string) => void;
}

interface Watched {
  readonly target: UpstreamUrl;
  readonly agent: http.Agent;
  readonly busy: () => boolean;
  /** bytesRead summed over its busy sockets at the last tick; -1: not busy then. */
  lastRead: number;
  probing: boolean;
}

/** Every socket the agent holds, busy or free (both documented read-only). */
function socketsOf(agent: http.Agent): Socket[] {
  const out: Socket[] = [];
  for (const pool of [agent.sockets, agent.freeSockets]) for (const name in pool) for (const s of pool[name] ?? []) out.push(s as Socket);
  return out;
}

function bytesRead(agent: http.Agent): number {
  let n = 0;
  for (const name in agent.sockets) for (const s of agent.sockets[name] ?? []) n += (s as Socket).bytesRead;
  return n;
}

export class H1Liveness {
  private readonly watched = new Map<string, Watched>();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: H1LivenessOptions) {
    this.timer = setInterval(() => this.tick(), opts.intervalMs).unref();
  }

  /** Watch an endpoint's agent; `busy` says whether calls are in flight on it. */
  watch(target: UpstreamUrl, agent: http.Agent, busy: () => boolean): void {
    this.watched.set(target.href, { target, agent, busy, lastRead: -1, probing: false });
  }

  forget(target: UpstreamUrl): void {
    this.watched.delete(target.href);
  }

  close(): void {
    clearInterval(this.timer);
    this.watched.clear();
  }

  private tick(): void {
    for (const w of this.watched.values()) {
      if (!w.busy()) {
        w.lastRead = -1;
        continue;
      }
      const read = bytesRead(w.agent);
      if (read !== w.lastRead || w.probing) {
        w.lastRead = read;
        continue;
      }
      w.probing = true;
      void this.opts.probe(w.target, this.opts.timeoutMs).then((alive) => {
        w.probing = false;
        // Bytes came while the probe ran: the connections are alive after all.
        if (alive || bytesRead(w.agent) !== w.lastRead || this.watched.get(w.target.href) !== w) return;
        this.lost(w);
      });
    }
  }

  private lost(w: Watched): void {
    w.lastRead = -1;
    const err = new RpcscopeError(ErrorCode.KEEPALIVE_TIMEOUT, `no byte from ${w.target.authority} for ${this.opts.intervalMs} ms while calls waited, and no TCP connection to it made within ${this.opts.timeoutMs} ms`);
    for (const socket of socketsOf(w.agent)) socket.destroy(err);
    this.opts.onTimeout(w.target.href);
  }
}
