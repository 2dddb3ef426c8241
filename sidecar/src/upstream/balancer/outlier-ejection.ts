// Passive outlier detection for outbound balancing, as Envoy's outlier
// detection and Linkerd's failure accrual do it: an endpoint that fails is
// taken out of rotation for a back-off (1 s, doubling with each failure in a
// row, at most 30 s), and comes back only once a connection to it can be made
// again, so that no caller's call is the probe.
//
// What counts as failing, learnt from the calls themselves:
// - `connect_failure`: no connection could be made (refused, timed out). The
//   endpoint backs off at once, as it always did; nothing can be sent there.
// - `keepalive_timeout`: a connection to it answered no PING (the pool says so).
// - `connection_lost`: its connection broke with calls in flight.
// - `unavailable`: 5 calls in a row answered UNAVAILABLE, or 502, 503, 504
//   (Envoy's consecutive_gateway_failure).
// The last three may be the sidecar's own doing — a stalled event loop times
// every PING out at once — so they never take out more than a tenth of the
// endpoints (at least one), Envoy's and gRPC's max_ejection_percent default:
// a sidecar that cannot tell its own fault from theirs never empties its set.
import { performance } from 'node:perf_hooks';
import type { CallRecord } from '../../call/call-record.ts';
import type { EjectionReason } from '../../call/faults.ts';
import type { Endpoint } from './endpoint.ts';

/** UNAVAILABLE (or a gateway status) answers in a row that eject an endpoint: Envoy's consecutive_gateway_failure. */
export const CONSECUTIVE_UNAVAILABLE = 5;
/** The share of endpoints that may sit ejected as outliers at once (at least one): Envoy's and gRPC's default. */
export const MAX_EJECTED_SHARE = 0.1;

const GRPC_UNAVAILABLE = 14;
const GATEWAY_STATUSES = new Set([502, 503, 504]);

/** How a call on an endpoint ended, as far as the endpoint's health goes. */
export type CallVerdict = 'busy' | 'connect_failure' | 'connection_lost' | 'unavailable' | 'answered';

export function verdict(call: CallRecord): CallVerdict {
  if (call.upstreamBusy) return 'busy';
  if (call.upstreamUnreachable) return 'connect_failure';
  if (call.upstreamLost) return 'connection_lost';
  if (call.grpcStatus === GRPC_UNAVAILABLE || GATEWAY_STATUSES.has(call.httpStatus)) return 'unavailable';
  return 'answered';
}

export interface EjectionHooks {
  /** Whether a connection to the endpoint can be made now (a TCP connect within --connect-timeout). */
  probe?(endpoint: Endpoint): Promise<boolean>;
  /** An endpoint was taken out of rotation. */
  ejected(endpoint: Endpoint, reason: EjectionReason): void;
}

export class OutlierEjection {
  constructor(
    private readonly endpoints: () => readonly Endpoint[],
    private readonly hooks: EjectionHooks,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** A call on `e` ended (its `active` already counted down): learn from how. */
  callEnded(e: Endpoint, call: CallRecord): void {
    const now = this.clock();
    switch (verdict(call)) {
      case 'busy':
      case 'answered':
        return;
      case 'connect_failure':
        return this.eject(e, 'connect_failure', now);
      case 'connection_lost':
        return this.eject(e, 'connection_lost', now);
      case 'unavailable':
        if (++e.consecutiveUnavailable >= CONSECUTIVE_UNAVAILABLE) this.eject(e, 'unavailable', now);
    }
  }

  /** A connection to `e` answered no PING within --keepalive-timeout. */
  keepaliveTimedOut(e: Endpoint): void {
    this.eject(e, 'keepalive_timeout', this.clock());
  }

  /** Endpoints out of rotation now. */
  ejectedCount(now: number = this.clock()): number {
    return this.endpoints().filter((e) => e.ejected(now)).length;
  }

  /** Starts a probe of every endpoint whose back-off is over; until it answers, the endpoint stays out. */
  probeDue(now: number = this.clock()): void {
    const probe = this.hooks.probe;
    if (!probe) return;
    for (const e of this.endpoints()) {
      if (e.probing || e.draining || e.retryAt === 0 || now < e.retryAt) continue;
      e.probing = true;
      void probe(e).then(
        (ok) => this.probed(e, ok),
        () => this.probed(e, false),
      );
    }
  }

  private probed(e: Endpoint, ok: boolean): void {
    e.probing = false;
    // Answering again: back in rotation. Its failures in a row stand until a call succeeds, so a relapse backs off longer.
    if (ok) e.retryAt = 0;
    else e.backOff(this.clock());
  }

  /** Takes `e` out unless it already is, or (outliers) the share out is already at its cap. */
  private eject(e: Endpoint, reason: EjectionReason, now: number): void {
    // Calls in flight on a connection that broke all end at once: one ejection, not one per call.
    if (e.ejected(now)) return;
    if (reason !== 'connect_failure') {
      const all = this.endpoints().length;
      const cap = Math.max(1, Math.floor(all * MAX_EJECTED_SHARE));
      if (this.ejectedCount(now) >= cap) return;
    }
    e.backOff(now);
    e.ejectedFor = reason;
    e.consecutiveUnavailable = 0;
    this.hooks.ejected(e, reason);
  }
}
