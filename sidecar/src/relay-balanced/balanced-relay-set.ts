// The balanced relay's client connections on one listener, and the endpoint
// connections they share: where the listener hands an outbound HTTP/2 connection
// when the balanced relay applies (balanced-applies.ts), and what its drain and
// shutdown reach.
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { whenUpstreamSpeaksH2 } from '../relay/relay-set.ts';
import { BalancedConnection } from './balanced-connection.ts';
import { EndpointHops } from './endpoint-hops.ts';

export class BalancedRelaySet {
  private readonly live = new Map<net.Socket, BalancedConnection>();
  private readonly endpoints: EndpointHops;
  private draining = false;

  constructor(private readonly ctx: ProxyContext) {
    this.endpoints = new EndpointHops(ctx);
  }

  /** Takes `socket` (its preface unread or put back) when the service speaks HTTP/2; otherwise `terminate` does (whenUpstreamSpeaksH2). */
  add(socket: net.Socket, conn: ConnectionRecord, terminate: () => void): void {
    whenUpstreamSpeaksH2(this.ctx, socket, () => this.take(socket, conn), terminate);
  }

  private take(socket: net.Socket, conn: ConnectionRecord): void {
    const c = new BalancedConnection(this.ctx, conn, socket, this.endpoints);
    this.live.set(socket, c);
    socket.once('close', () => this.live.delete(socket));
    if (this.draining) c.goAway();
  }

  /** An endpoint left discovery: its connections close once their streams are done. */
  closeTarget(target: UpstreamUrl): void {
    this.endpoints.closeTarget(target);
  }

  /** Whether `socket` is carried here; if so, it is asked to go as --max-connection-age says. */
  ageOut(socket: net.Socket): boolean {
    const c = this.live.get(socket);
    c?.goAway();
    return c !== undefined;
  }

  /** Client connections that have not closed themselves yet (each does once its second GOAWAY went and its calls ended). */
  get settling(): number {
    let n = 0;
    for (const c of this.live.values()) if (!c.settled) n++;
    return n;
  }

  drain(): void {
    this.draining = true;
    for (const c of this.live.values()) c.goAway();
  }

  destroy(): void {
    for (const c of this.live.values()) c.destroy();
    this.endpoints.close();
  }
}
