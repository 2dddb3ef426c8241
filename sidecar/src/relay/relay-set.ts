// The relayed connections of one listener: where the listener hands an HTTP/2
// connection when the relay applies, and what its drain and shutdown reach.
import type net from 'node:net';
import { noopTracing } from '../call/call-tracing.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { RelayConnection } from './relay-connection.ts';

/**
 * Runs `relay` when --upstream speaks HTTP/2, `terminate` when it speaks
 * HTTP/1.1; with --upstream-protocol auto and nothing learned yet, `socket` waits
 * (paused) for the one question per endpoint the terminating path asks too. An
 * upstream that cannot be reached (nothing learned) is relayed: the relay answers
 * its calls as unreachable.
 */
export function whenUpstreamSpeaksH2(ctx: ProxyContext, socket: net.Socket, relay: () => void, terminate: () => void): void {
  const { protocols, config } = ctx;
  const version = protocols.versionFor(config.upstream, false, '2');
  if (version === '1.1') return terminate();
  if (version === '2') return relay();
  socket.pause();
  void protocols.learn(config.upstream, '2').then(() => {
    if (socket.destroyed) return;
    if (protocols.versionFor(config.upstream, false, '2') === '1.1') terminate();
    else relay();
  });
}

export class RelaySet {
  private readonly live = new Map<net.Socket, RelayConnection>();
  private draining = false;

  constructor(private readonly ctx: ProxyContext) {}

  /**
   * Relays `socket` (its first bytes, the preface, unread or put back) to the
   * upstream, when the upstream speaks HTTP/2; otherwise `terminate` takes it.
   * With --upstream-protocol auto and nothing learned yet, the connection waits
   * (paused) for the one question per endpoint the terminating path asks too.
   */
  add(socket: net.Socket, conn: ConnectionRecord, terminate: () => void): void {
    whenUpstreamSpeaksH2(this.ctx, socket, () => this.relay(socket, conn), terminate);
  }

  private relay(socket: net.Socket, conn: ConnectionRecord): void {
    const relay = new RelayConnection({
      ctx: this.ctx,
      conn,
      downstream: socket,
      target: this.ctx.config.upstream,
      // Tracing hands the upstream the sidecar's span: each request's header block is written anew.
      translate: this.ctx.tracing !== noopTracing,
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

  /** Relayed connections that have not closed themselves yet (each does once its second GOAWAY went and its calls ended). */
  get settling(): number {
    let n = 0;
    for (const r of this.live.values()) if (r.phase !== 'closed') n++;
    return n;
  }

  drain(): void {
    this.draining = true;
    for (const r of this.live.values()) r.goAway();
  }

  destroy(): void {
    for (const r of this.live.values()) r.destroy();
  }
}
