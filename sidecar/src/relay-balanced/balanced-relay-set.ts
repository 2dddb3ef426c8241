// The balanced relay's client connections on one listener, and the endpoint
// connections they share: where the listener hands an outbound HTTP/2 connection
// when the balanced relay applies (balanced-applies.ts), and what its drain and
// shutdown reach.
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { BalancedConnection } from './balanced-connection.ts';
import { EndpointHops } from './endpoint-hops.ts';

export class BalancedRelaySet {
  private readonly live = new Map<net.Socket, BalancedConnection>();
  private readonly endpoints: EndpointHops;
  private draining = false;

  constructor(private readonly ctx: ProxyContext) {
    this.endpoints = new EndpointHops(ctx);
  }

  /**
   * Takes `socket` (its preface unread or put back) when the service speaks
   * HTTP/2; otherwise `terminate` does. With --upstream-protocol auto and
   * nothing learned yet, the connection waits (paused) for the one question the
   * terminating path asks too.
   */
  add(socket: net.Socket, conn: ConnectionRecord, terminate: () => void): void {
    const { protocols, config } = this.ctx;
    const version = protocols.versionFor(config.upstream, false, '2');
    if (version === '1.1') return terminate();
    if (version === '2') return this.take(socket, conn);
    socket.pause();
    void protocols.learn(config.upstream, '2').then(() => {
      if (socket.destroyed) return;
      if (protocols.versionFor(config.upstream, false, '2') === '1.1') terminate();
      else this.take(socket, conn);
    });
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

  drain(): void {
    this.draining = true;
    for (const c of this.live.values()) c.goAway();
  }

  destroy(): void {
    for (const c of this.live.values()) c.destroy();
    this.endpoints.close();
  }
}
