// The HTTP/1.1 connections of one listener relayed to the app
// (--http1-data-plane relay): where the listener hands them, and what its drain
// and shutdown reach.
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { H1RelayConnection } from './h1-relay-connection.ts';

export class H1RelaySet {
  private readonly live = new Map<net.Socket, H1RelayConnection>();

  constructor(private readonly ctx: ProxyContext) {}

  /** Relays `socket`; `closing` says when its client is to be asked to close after its response. */
  add(socket: net.Socket, conn: ConnectionRecord, closing: () => boolean): void {
    this.live.set(socket, new H1RelayConnection({ ctx: this.ctx, conn, client: socket, closing }));
    socket.once('close', () => this.live.delete(socket));
  }

  /** Idle connections go now; busy ones close after their response (closing() is true by then). */
  drain(): void {
    for (const r of this.live.values()) r.drain();
  }

  destroy(): void {
    for (const r of this.live.values()) r.destroy();
  }
}
