// Which upstream a call goes to. Inbound: the app (or, for the gRPC family, the
// --grpc-upstream). Outbound: an endpoint of the upstream service, chosen per call
// by the configured picker from the endpoints discovery knows now.
import { performance } from 'node:perf_hooks';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Logger } from '../log.ts';
import type { CallRecord } from '../observe/call-record.ts';
import { noopObserver, type ConnectionRecord, type Observer } from '../observe/observer.ts';
import { Endpoint } from './endpoint.ts';
import type { Picker } from './picker.ts';
import type { EndpointAddress, EndpointResolver } from './resolver.ts';

/**
 * Where a call goes, and how the balancer learns that it ended: the call hands
 * its record to onCallEnded once, after its end is recorded (as grpc-js's pick
 * result carries onCallEnded). Bound once per endpoint, not per call.
 */
export interface UpstreamPick {
  readonly target: UpstreamUrl;
  /** Undefined when the choice does not depend on how calls end (inbound: the app). */
  readonly onCallEnded: ((call: CallRecord) => void) | undefined;
}

export interface Upstreams {
  /** The upstream for a call on this downstream connection, or undefined when none is known. */
  pick(connectionId: number, grpcFamily: boolean): UpstreamPick | undefined;
  /** Every endpoint known now, as `host:port` (for the endpoint gauge and the skew). */
  known(): readonly string[];
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
}

export class BalancedUpstreams implements Upstreams {
  private readonly endpoints = new Map<string, Endpoint>();
  private usable: Endpoint[] = [];
  /** Each endpoint's pick, bound once when the endpoint is added. */
  private readonly picks = new WeakMap<Endpoint, UpstreamPick>();
  private timer: NodeJS.Timeout | undefined;
  readonly observer: Observer;

  constructor(readonly opts: BalancedOptions) {
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
      this.timer = setTimeout(() => void this.refresh().finally(tick), this.opts.resolveIntervalMs);
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
    const now = performance.now();
    let candidates = this.usable.filter((e) => e.usable(now));
    // Every endpoint backing off: try the one whose back-off ends first rather than fail the call.
    if (candidates.length === 0 && this.usable.length > 0) candidates = [this.usable.reduce((a, b) => (a.retryAt <= b.retryAt ? a : b))];
    if (candidates.length === 0) return undefined;
    const e = this.opts.picker.pick(candidates, connectionId);
    e.active++;
    e.calls++;
    return this.picks.get(e);
  }

  private callEnded(e: Endpoint, call: CallRecord): void {
    if (call.upstreamBusy) e.passed();
    else {
      const latency = call.upstreamUnreachable || call.upstreamStartTime === undefined ? undefined : (call.upstreamEndTime ?? call.endTime) - call.upstreamStartTime;
      e.finished(performance.now(), latency);
    }
    if (e.draining && e.active === 0) this.opts.retire(e.target);
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
      this.picks.set(e, { target, onCallEnded: (call) => this.callEnded(e, call) });
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
