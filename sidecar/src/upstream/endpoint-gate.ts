// One upstream endpoint's HTTP/1.1 gate, for both data planes: the slots taken
// (a call in flight on the terminating path's agent, an upstream connection held
// by the HTTP/1.1 relay), the connections being made, and the calls waiting for
// a slot, in the order they came. --upstream-max-connections bounds the slots,
// --upstream-max-connecting the connections being made, --upstream-max-pending
// the calls waiting; past it a call is refused (queueFull), answered
// UNAVAILABLE (503) by its data plane and counted.
//
// A slot comes free in one of three ways: one is let go (drain()), an idle
// connection is reusable at once (`reusable`, the agent's free keep-alive
// sockets), or an idle holder gives its connection up to the first call waiting
// (idle()): a relayed client connection idle between its requests keeps none of
// the app's connections from the callers who wait.
import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export interface GateLimits {
  /** Slots per endpoint, --upstream-max-connections. */
  readonly maxConnections: number;
  /** Connections being made at once per endpoint, --upstream-max-connecting. */
  readonly maxConnecting: number;
  /** Calls waiting for a slot per endpoint, --upstream-max-pending. */
  readonly maxPending: number;
}

/** The error a call past the queue fails with; its data plane answers it UNAVAILABLE (503), and the endpoint stays in rotation. */
export function queueFull(authority: string, limits: GateLimits): RpcscopeError {
  return new RpcscopeError(ErrorCode.QUEUE_FULL, `${limits.maxConnections} connections to ${authority} busy and ${limits.maxPending} calls waiting (--upstream-max-pending)`);
}

/** A call at the gate: started when admitted (`given`: an idle holder's connection, its slot with it), or failed. */
export interface Waiting<T> {
  readonly cancelled: boolean;
  start(given: T | undefined): void;
  fail(err: Error): void;
}

/** An idle connection's holder: gives it up (its slot with it), or undefined when it no longer can. */
export type IdleHolder<T> = () => T | undefined;

export class EndpointGate<T = never> {
  /** Slots taken: the data plane counts them up as it takes one and down as it lets it go, then calls drain(). */
  inFlight = 0;
  /** Connections being made (connectStarted()). */
  connecting = 0;
  private readonly waiting: (Waiting<T> | undefined)[] = [];
  private head = 0;
  private readonly holders = new Set<IdleHolder<T>>();

  constructor(
    private readonly limits: GateLimits,
    /** Whether an idle connection can take a call without a new slot being made (the agent's free sockets). */
    private readonly reusable: () => boolean = () => false,
  ) {}

  /** Whether a call may start now: to a slot free, or to a new connection. */
  private canStart(): boolean {
    if (this.inFlight >= this.limits.maxConnections) return false;
    return this.connecting < this.limits.maxConnecting || this.reusable();
  }

  /** Whether a call may start now: nobody waits before it, and a socket is free or may be made. */
  free(): boolean {
    return this.head === this.waiting.length && this.canStart();
  }

  /** Starts the call now, queues it, or (queue full) returns false. */
  admit(call: Waiting<T>): boolean {
    if (this.free()) {
      call.start(undefined);
      return true;
    }
    if (this.waiting.length - this.head >= this.limits.maxPending) {
      // Calls whose callers went away hold no place: they are let go before anyone is refused.
      const live = this.waiting.filter((w, i) => i >= this.head && !w!.cancelled);
      this.waiting.length = 0;
      this.head = 0;
      this.waiting.push(...live);
      if (live.length >= this.limits.maxPending) return false;
    }
    this.waiting.push(call);
    this.handIdle();
    return true;
  }

  /** A connection is being made: counted among them until the function returned is called (made, or failed; once is counted). */
  connectStarted(): () => void {
    this.connecting++;
    let connecting = true;
    return () => {
      if (!connecting) return;
      connecting = false;
      this.connecting--;
      this.drain();
    };
  }

  /** `holder` holds a connection idle, to be given to the first call that waits for one. */
  idle(holder: IdleHolder<T>): void {
    this.holders.add(holder);
    this.handIdle();
  }

  /** `holder`'s connection is busy again, or gone. */
  busy(holder: IdleHolder<T>): void {
    this.holders.delete(holder);
  }

  /** Gives a connection no longer needed (its slot with it) to the first call waiting; false when none waits. */
  pass(given: T): boolean {
    const next = this.nextLive();
    if (!next) return false;
    this.startNext(next, given);
    return true;
  }

  /** The endpoint is gone: the calls still waiting fail (UNAVAILABLE) rather than wait for a socket that will not come. */
  abandon(authority: string): void {
    const left = this.waiting.slice(this.head);
    this.waiting.length = 0;
    this.head = 0;
    for (const w of left) if (!w!.cancelled) w!.fail(new Error(`upstream endpoint ${authority} left before a connection was free`));
  }

  /** A slot came free, a connection was made or failed, or a call ended: start whoever waits and now can. */
  drain(): void {
    for (let next = this.nextLive(); next && this.canStart(); next = this.nextLive()) this.startNext(next, undefined);
    this.handIdle();
    if (this.head === this.waiting.length) {
      this.waiting.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.waiting.length) {
      this.waiting.splice(0, this.head);
      this.head = 0;
    }
  }

  /** The first waiting call whose caller is still there; those who went away are dropped, never started. */
  private nextLive(): Waiting<T> | undefined {
    while (this.head < this.waiting.length) {
      const next = this.waiting[this.head]!;
      if (!next.cancelled) return next;
      this.waiting[this.head++] = undefined;
    }
    return undefined;
  }

  private startNext(next: Waiting<T>, given: T | undefined): void {
    this.waiting[this.head++] = undefined;
    // Started from a socket's or the agent's event: a request Node refuses (a header it
    // will not write) fails that call, not the event's emitter.
    try {
      next.start(given);
    } catch (err) {
      next.fail(err as Error);
    }
  }

  /** Idle connections go to the calls waiting, first come first served. */
  private handIdle(): void {
    for (const holder of this.holders) {
      const next = this.nextLive();
      if (!next) return;
      this.holders.delete(holder);
      const given = holder();
      if (given !== undefined) this.startNext(next, given);
    }
  }
}
