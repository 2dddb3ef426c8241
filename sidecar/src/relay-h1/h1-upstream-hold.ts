// The upstream connection one relayed client connection holds
// (h1-relay-connection.ts), and the getting, keeping and letting go of it.
//
// The app's connections are bounded as on the terminating path: each one holds
// a slot at the gate (--upstream-max-connections, --upstream-max-connecting,
// h1-relay-upstream.ts); a request that finds none free waits, its client not
// read meanwhile, in the order it came; past --upstream-max-pending the client
// connection answers it 503 and counts it. A connection idle between its
// client's requests is handed to the first call waiting, and one whose client
// leaves goes to a call waiting, or is kept idle for the next client's request
// (h1-idle-upstreams.ts). One the app closes, or idle too long, while no
// exchange is in flight is let go: the next request connects anew.
import type net from 'node:net';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { EndpointGate } from '../upstream/endpoint-gate.ts';
import type { H1IdleUpstreams } from './h1-idle-upstreams.ts';
import { H1RelayUpstream, type H1UpstreamOwner } from './h1-relay-upstream.ts';

/** What the client connection does for the hold, and hears of the connection it holds. */
export interface H1HoldHost {
  /** Runs the handling of an upstream event: a fault in it ends the client's connection only. */
  guard(fn: () => void): void;
  /** An exchange is in flight: the connection held is neither given up nor kept idle. */
  busy(): boolean;
  /** A connection is held from now: its answer is read from its first byte. */
  attached(): void;
  /** The connection held reached the app at `at` (connected, or handed over idle): the call waiting for it counts on it. */
  opened(at: number): void;
  /** Bytes from the connection held (the host guards their handling). */
  data(up: H1RelayUpstream, chunk: Buffer): void;
  /** The wait at the gate failed (its endpoint left): the exchange that waited, the only one while it waits, fails. */
  failed(err: Error): void;
  /** The connection held closed, and is held no more; `err` is what it reported, if anything. */
  closed(err: (Error & { code?: string }) | undefined): void;
  /** Whether the client is to be read may have changed: a connection came or went, or its writes wait for 'drain'. */
  sync(): void;
}

export class H1UpstreamHold {
  private up: H1RelayUpstream | undefined;
  /** Waiting at the gate for an upstream connection: the request's bytes so far, and how to leave the queue. */
  private queued: { readonly bytes: Buffer[]; cancelled: boolean } | undefined;
  private upError: (Error & { code?: string }) | undefined;
  /** A write toward the app waits for 'drain': the client is not read meanwhile. */
  private blocked = false;

  /** What the hold hears of the upstream connection it holds. */
  private readonly owner: H1UpstreamOwner = {
    opened: (up) => this.host.guard(() => {
      if (this.up === up) this.host.opened(up.record.openTime);
    }),
    data: (up, chunk) => {
      if (this.up === up) this.host.data(up, chunk);
    },
    // The app closed its side (RFC 9112 §9.6), or the connection was idle too long: with nothing in flight, the next request connects anew.
    ended: (up) => this.host.guard(() => this.idleGone(up)),
    idle: (up) => this.host.guard(() => this.idleGone(up)),
    error: (up, err) => {
      if (this.up === up) this.upError = err;
    },
    closed: (up) => this.host.guard(() => {
      if (this.up !== up) return;
      this.detach();
      this.host.closed(this.upError);
    }),
  };
  /** Gives the idle upstream connection up to a call waiting at the gate. */
  private readonly giveUp = (): H1RelayUpstream | undefined => {
    const up = this.up;
    if (!up || this.host.busy() || !up.reusable) return undefined;
    this.detach();
    return up;
  };

  constructor(
    private readonly ctx: ProxyContext,
    /** The upstream endpoint's gate (--upstream-max-connections and the rest), shared by the listener's relayed connections. */
    private readonly gate: EndpointGate<H1RelayUpstream>,
    /** The app's connections no client connection holds: taken before connecting, given what a leaving client held. */
    private readonly idleUpstreams: H1IdleUpstreams,
    private readonly host: H1HoldHost,
  ) {}

  /** The connection held, if any (none while waiting at the gate). */
  get current(): H1RelayUpstream | undefined {
    return this.up;
  }

  /** The app's connection held, for the client's back-pressure (paused while the client's writes wait) and corking. */
  get socket(): net.Socket | undefined {
    return this.up?.socket;
  }

  /** The request's bytes cannot go on yet: waiting at the gate, or for 'drain'. */
  get stalled(): boolean {
    return this.blocked || this.queued !== undefined;
  }

  /**
   * A request begins: the connection held is no longer offered to the gate, and
   * without one (nor a place in the queue) an idle one a client left is taken,
   * if one is kept: no connect, and no slot more (none is kept while calls wait
   * at the gate). True when the request goes on a connection that was up before
   * it, which the app may be closing as the request goes.
   */
  claim(): boolean {
    this.gate.busy(this.giveUp);
    if (!this.up && !this.queued) {
      const kept = this.idleUpstreams.take();
      if (kept) this.attach(kept);
    }
    return this.up !== undefined;
  }

  /**
   * The upstream connection the exchange goes on: the one held, or one the gate
   * gives, at once or after the calls waiting before it (what is written is
   * held meanwhile, and the client is not read). False when the queue is full.
   */
  acquire(): boolean {
    if (this.up || this.queued) return true;
    const queued = { bytes: [] as Buffer[], cancelled: false };
    this.queued = queued;
    const admitted = this.gate.admit({
      get cancelled() {
        return queued.cancelled;
      },
      start: (given) => this.host.guard(() => {
        if (this.queued !== queued) return;
        this.queued = undefined;
        this.attach(given ?? new H1RelayUpstream(this.ctx, this.gate, this.owner));
        // A connection handed over idle is up: the call, which waited for it, reaches the app now.
        if (given) this.host.opened(now());
        for (const bytes of queued.bytes) this.write(bytes);
        this.host.sync();
      }),
      // The gate fails a waiting call only when its endpoint leaves, which the inbound relay's one upstream does not.
      fail: (err) => this.host.guard(() => {
        if (this.queued !== queued) return;
        this.queued = undefined;
        this.host.failed(err);
      }),
    });
    if (admitted) {
      this.host.sync();
      return true;
    }
    this.queued = undefined;
    return false;
  }

  /** Idle until the client's next request: a call waiting at the gate may have the connection meanwhile. */
  offer(): void {
    if (this.up) this.gate.idle(this.giveUp);
  }

  /** Closes the app's connection (or leaves the gate's queue): the next request, if any, connects anew. */
  drop(): void {
    if (this.queued) this.queued.cancelled = true;
    this.queued = undefined;
    const up = this.detach();
    up?.socket.destroy();
    if (up) this.host.sync();
  }

  /** This client is done with the app's connection: a call waiting at the gate has it if it can carry another request, else it is kept idle, else it closes. */
  letGo(): void {
    const up = this.up;
    if (up && !this.host.busy() && up.reusable && (this.gate.pass(up) || this.idleUpstreams.put(up))) {
      this.detach();
      return;
    }
    this.drop();
  }

  /** No longer held: not listened to, nor offered to the gate, from here; returned to whoever takes it (a tunnel). */
  detach(): H1RelayUpstream | undefined {
    const up = this.up;
    this.gate.busy(this.giveUp);
    this.up = undefined;
    this.blocked = false;
    if (up?.owner === this.owner) up.owner = undefined;
    return up;
  }

  /** Writes toward the app: held while waiting at the gate; the client is not read while the write waits for 'drain'. */
  write(bytes: Buffer): void {
    if (this.queued) return void this.queued.bytes.push(bytes);
    const up = this.up?.socket;
    if (!up || up.write(bytes) || this.blocked) return;
    this.blocked = true;
    this.host.sync();
    up.once('drain', () => {
      if (this.up?.socket !== up) return;
      this.blocked = false;
      this.host.sync();
    });
  }

  private attach(up: H1RelayUpstream): void {
    up.owner = this.owner;
    this.up = up;
    this.host.attached();
    this.upError = undefined;
    this.blocked = false;
    up.socket.resume();
  }

  /** The app closed an idle connection, or it was idle too long: let go, and the next request connects anew. */
  private idleGone(up: H1RelayUpstream): void {
    if (this.up === up && !this.host.busy()) this.drop();
  }
}
