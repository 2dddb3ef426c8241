// Which upstream a call goes to. Inbound: the app (or, for the gRPC family, the
// --grpc-upstream). Outbound: an endpoint of the upstream service, chosen per call
// by the configured picker from the endpoints discovery knows now.
import { performance } from 'node:perf_hooks';
import type { UpstreamUrl } from '../../config/parse-value.ts';
import type { Logger } from '../../log.ts';
import type { CallRecord } from '../../call/call-record.ts';
import { noopObserver, type ConnectionRecord, type Observer } from '../../call/observer.ts';
import type { EjectionReason } from '../../call/faults.ts';
import type { UpstreamPick } from '../../call/call.ts';
import { now } from '../../clock.ts';
import { Endpoint } from './endpoint.ts';
import { OutlierEjection } from './outlier-ejection.ts';
import type { Picker } from './picker.ts';
import type { EndpointAddress, EndpointResolver } from './resolver.ts';


/** One endpoint as /debug/connections lists it. */
export interface EndpointView {
  upstream: string;
  state: 'ready' | 'ejected' | 'probing' | 'draining';
  calls_active: number;
  calls: number;
  /** Why it was last ejected, until a call on it succeeds. */
  ejected_for?: EjectionReason;
  /** Seconds until its back-off ends (then a probe), while it is ejected. */
  ejected_seconds_left?: number;
  failures_in_a_row: number;
}

export interface Upstreams {
  /** The upstream for a call on this downstream connection, or undefined when none is known. */
  pick(connectionId: number, grpcFamily: boolean): UpstreamPick | undefined;
  /** Every endpoint known now, as `host:port` (for the endpoint gauge and the skew). */
  known(): readonly string[];
  /** A pooled connection to `href` answered no PING: the endpoint is taken out of rotation (outbound). */
  keepaliveTimedOut(href: string): void;
  /** Endpoints out of rotation now (outbound). */
  ejectedCount(): number;
  /** Every endpoint and its state, for /debug/connections; empty inbound. */
  describe(): EndpointView[];
  /** Learns downstream connection closes (the sticky picker forgets the connection); call ends come through the pick. */
  readonly observer: Observer;
  start(): Promise<void>;
  stop(): void;
}

export function fixedUpstreams(upstream: UpstreamUrl, grpcUpstream: UpstreamUrl | undefined): Upstreams {
  const known = [upstream.authority, ...(grpcUpstream ? [grpcUpstream.authority] : [])];
  const toUpstream: UpstreamPick = { target: upstream, onCallEnded: undefined };
  const toGrpcUpstream: UpstreamPick | undefined = grpcUpstream ? { target: grpcUpstream, onCallEnded: undefined } : undefined;
  return {
    pick: (_conn, grpcFamily) => (grpcFamily && toGrpcUpstream) || toUpstream,
    known: () => known,
    keepaliveTimedOut: () => {},
    ejectedCount: () => 0,
    describe: () => [],
    observer: noopObserver,
    start: async () => {},
    stop() {},
  };
}

function endpointUrl(base: UpstreamUrl, addr: EndpointAddress): UpstreamUrl {
  const hostText = addr.host.includes(':') ? `[${addr.host}]` : addr.host;
  const authority = `${hostText}:${addr.port}`;
  return { tls: base.tls, host: addr.host, port: addr.port, authority, href: `${base.tls ? 'https' : 'http'}://${authority}` };
}

export interface BalancedOptions {
  upstream: UpstreamUrl;
  resolver: EndpointResolver;
  picker: Picker;
  resolveIntervalMs: number;
  log: Logger;
  /** Close the pooled connections of an endpoint that is gone and idle. */
  retire(target: UpstreamUrl): void;
  /** Whether a connection to an ejected endpoint can be made again; without it an endpoint returns when its back-off ends. */
  probe?(target: UpstreamUrl): Promise<boolean>;
  /** An endpoint was ejected (counted in rpcscope_upstream_ejections_total). */
  onEjected?(reason: EjectionReason): void;
}

export class BalancedUpstreams implements Upstreams {
  private readonly endpoints = new Map<string, Endpoint>();
  private usable: Endpoint[] = [];
  private timer: NodeJS.Timeout | undefined;
  readonly observer: Observer;
  private readonly ejection: OutlierEjection;

  constructor(readonly opts: BalancedOptions) {
    const probe = opts.probe;
    this.ejection = new OutlierEjection(() => this.usable, {
      ...(probe ? { probe: (e: Endpoint) => probe(e.target) } : {}),
      ejected: (e, reason) => {
        opts.onEjected?.(reason);
        opts.log.warn('endpoint ejected', { upstream: e.address, reason, forMs: Math.round(e.retryAt - performance.now()), failuresInARow: e.failuresInARow });
      },
    });
    this.observer = {
      ...noopObserver,
      connectionClosed: (conn: ConnectionRecord) => {
        if (conn.side === 'downstream') opts.picker.connectionClosed?.(conn.id);
      },
    };
  }

  async start(): Promise<void> {
    await this.refresh();
    const tick = (): void => {
      // Ejected endpoints are probed on the resolve tick too, so one comes back without a call to wake it.
      this.timer = setTimeout(() => void this.refresh().finally(() => (this.ejection.probeDue(), tick())), this.opts.resolveIntervalMs);
      this.timer.unref();
    };
    tick();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  known(): readonly string[] {
    return [...this.endpoints.keys()];
  }

  pick(connectionId: number): UpstreamPick | undefined {
    // The data plane's clock: within a read, the time the read already took.
    const t = now();
    this.ejection.probeDue(t);
    let candidates = this.usable;
    // Most calls find every endpoint usable: the list as it is, no copy made for the call.
    for (let i = 0; i < candidates.length; i++) {
      if (!candidates[i]!.usable(t)) {
        candidates = this.usable.filter((e) => e.usable(t));
        break;
      }
    }
    // Every endpoint backing off: try the one whose back-off ends first rather than fail the call.
    if (candidates.length === 0 && this.usable.length > 0) candidates = [this.usable.reduce((a, b) => (a.retryAt <= b.retryAt ? a : b))];
    if (candidates.length === 0) return undefined;
    const e = this.opts.picker.pick(candidates, connectionId);
    e.active++;
    e.calls++;
    return e.pick;
  }

  private callEnded(e: Endpoint, call: CallRecord): void {
    const answered = !call.upstreamBusy && !call.upstreamUnreachable && !call.upstreamLost && call.upstreamStartTime !== undefined;
    // Only an answer teaches latency (and clears the failures in a row); the rest is the ejection's to judge.
    if (answered) e.finished(now(), (call.upstreamEndTime ?? call.endTime) - call.upstreamStartTime!);
    else e.passed();
    this.ejection.callEnded(e, call);
    if (e.draining && e.active === 0) this.opts.retire(e.target);
  }

  keepaliveTimedOut(href: string): void {
    const e = this.usable.find((u) => u.target.href === href);
    if (e) this.ejection.keepaliveTimedOut(e);
  }

  ejectedCount(): number {
    return this.ejection.ejectedCount();
  }

  describe(): EndpointView[] {
    const now = performance.now();
    return [...this.endpoints.values()].map((e) => ({
      upstream: e.address,
      state: e.draining ? 'draining' : e.probing ? 'probing' : e.ejected(now) ? 'ejected' : 'ready',
      calls_active: e.active,
      calls: e.calls,
      ...(e.ejectedFor ? { ejected_for: e.ejectedFor } : {}),
      ...(e.ejected(now) && !e.probing ? { ejected_seconds_left: Math.round((e.retryAt - now) / 100) / 10 } : {}),
      failures_in_a_row: e.failuresInARow,
    }));
  }

  private async refresh(): Promise<void> {
    let addrs: EndpointAddress[];
    try {
      addrs = await this.opts.resolver.resolve();
    } catch (err) {
      this.opts.log.warn('endpoint discovery failed; keeping the last endpoints', { error: (err as Error).message, endpoints: this.endpoints.size });
      return;
    }
    const seen = new Set<string>();
    for (const addr of addrs) {
      const target = endpointUrl(this.opts.upstream, addr);
      seen.add(target.authority);
      const known = this.endpoints.get(target.authority);
      if (known) {
        known.draining = false;
        continue;
      }
      const e = new Endpoint(target.authority, target);
      this.endpoints.set(target.authority, e);
      e.pick = { target, onCallEnded: (call) => this.callEnded(e, call) };
      this.opts.log.info('endpoint added', { upstream: target.authority });
    }
    for (const [address, e] of this.endpoints) {
      if (seen.has(address)) continue;
      // Gone from discovery: calls in flight finish; new ones go elsewhere.
      e.draining = true;
      this.endpoints.delete(address);
      this.opts.log.info('endpoint removed', { upstream: address, inFlight: e.active });
      if (e.active === 0) this.opts.retire(e.target);
    }
    this.usable = [...this.endpoints.values()];
  }
}
