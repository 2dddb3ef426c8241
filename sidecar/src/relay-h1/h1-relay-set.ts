// The HTTP/1.1 connections of one listener relayed to the app
// (--http1-data-plane relay): where the listener hands them, which of them the
// relay takes, and what its drain and shutdown reach.
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { EndpointGate } from '../upstream/endpoint-gate.ts';
import { H1IdleUpstreams } from './h1-idle-upstreams.ts';
import { H1RelayConnection } from './h1-relay-connection.ts';
import type { H1RelayUpstream } from './h1-relay-upstream.ts';

export class H1RelaySet {
  private readonly live = new Map<net.Socket, H1RelayConnection>();
  /** Connections held (paused) while the app's HTTP version is learned. */
  private readonly waiting = new Set<net.Socket>();
  /** The app's gate: its connections, those being made, and the calls waiting for one, across the listener's relayed connections. */
  private readonly gate: EndpointGate<H1RelayUpstream>;
  /** The app's connections no client connection holds, for the next request. */
  private readonly idle: H1IdleUpstreams;

  constructor(private readonly ctx: ProxyContext) {
    this.gate = new EndpointGate(ctx.config.h1Limits);
    this.idle = new H1IdleUpstreams(this.gate);
  }

  /**
   * Relays `socket` (its first bytes put back, paused) when the app speaks
   * HTTP/1.1; an HTTP/2-only app's callers go to `terminate`, the terminating
   * path, which translates their calls. With --upstream-protocol auto and nothing
   * learned yet, the connection waits, unread, for the one question per endpoint
   * the terminating path asks too; an app that could not be asked (nothing
   * learned) leaves the connection to the terminating path, which answers as
   * it does for any unreachable app. `closing` says when its client is to be
   * asked to close after its response.
   */
  add(socket: net.Socket, conn: ConnectionRecord, closing: () => boolean, terminate: () => void): void {
    const { protocols, config } = this.ctx;
    const version = protocols.versionFor(config.upstream, false, '1.1');
    if (version === '1.1') return this.relay(socket, conn, closing, terminate);
    if (version === '2') return terminate();
    socket.pause();
    this.waiting.add(socket);
    void protocols.learn(config.upstream, '1.1').then(() => {
      this.waiting.delete(socket);
      // The client left, or was answered and is closing (--request-headers-timeout), meanwhile.
      if (socket.destroyed || !socket.writable) return;
      try {
        if (protocols.versionFor(config.upstream, false, '1.1') === '1.1') this.relay(socket, conn, closing, terminate);
        else terminate();
      } catch (err) {
        // Past the listener's own guard: a fault here ends this connection only.
        this.ctx.faults.internalError('listener', err);
        socket.destroy();
      }
    });
  }

  private relay(socket: net.Socket, conn: ConnectionRecord, closing: () => boolean, terminate: () => void): void {
    const handOver = (): void => {
      this.live.delete(socket);
      terminate();
    };
    this.live.set(socket, new H1RelayConnection({ ctx: this.ctx, conn, client: socket, gate: this.gate, idleUpstreams: this.idle, closing, terminate: handOver }));
    socket.once('close', () => this.live.delete(socket));
  }

  /**
   * Idle connections go now; busy ones close after their response (closing() is
   * true by then), as do the held ones, whose request came before the drain.
   */
  drain(): void {
    this.idle.closeAll();
    for (const r of this.live.values()) r.drain();
  }

  destroy(): void {
    this.idle.closeAll();
    for (const s of this.waiting) s.destroy();
    for (const r of this.live.values()) r.destroy();
  }
}
