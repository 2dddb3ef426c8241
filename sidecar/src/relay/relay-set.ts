// The relayed connections of one listener: where the listener hands an HTTP/2
// connection when the relay applies, and what its drain and shutdown reach.
import { readFileSync } from 'node:fs';
import type net from 'node:net';
import type { ConnectionRecord } from '../observe/observer.ts';
import { ConnectFailureLog } from '../proxy/connect-failure-log.ts';
import type { ProxyContext } from '../proxy/context.ts';
import { RelayConnection } from './relay-connection.ts';

export class RelaySet {
  private readonly live = new Map<net.Socket, RelayConnection>();
  private readonly ca: Buffer | undefined;
  private readonly connectFailures: ConnectFailureLog;
  private draining = false;

  constructor(private readonly ctx: ProxyContext, private readonly nextConnId: () => number) {
    this.ca = ctx.config.upstreamCa ? readFileSync(ctx.config.upstreamCa) : undefined;
    this.connectFailures = new ConnectFailureLog(ctx.log);
  }

  /** Relays `socket` (its first bytes, the preface, unread or put back) to the upstream. */
  add(socket: net.Socket, conn: ConnectionRecord): void {
    const relay = new RelayConnection({
      ctx: this.ctx,
      conn,
      downstream: socket,
      target: this.ctx.config.upstream,
      upstreamCa: this.ca,
      nextConnId: this.nextConnId,
      connectFailures: this.connectFailures,
    });
    this.live.set(socket, relay);
    socket.once('close', () => this.live.delete(socket));
    if (this.draining) relay.goAway();
  }

  /** Whether `socket` is relayed; if so, it is asked to go as --max-connection-age says. */
  ageOut(socket: net.Socket): boolean {
    const relay = this.live.get(socket);
    relay?.goAway();
    return relay !== undefined;
  }

  drain(): void {
    this.draining = true;
    for (const r of this.live.values()) r.goAway();
  }

  destroy(): void {
    for (const r of this.live.values()) r.destroy();
  }
}
