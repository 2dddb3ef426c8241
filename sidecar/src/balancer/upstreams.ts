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

export interface Upstreams {
  /** The upstream for this call, or undefined when none is known. */
  pick(call: CallRecord, connectionId: number, grpcFamily: boolean): UpstreamUrl | undefined;
  /** Every endpoint known now, as `host:port` (for the endpoint gauge and the skew). */
  known(): readonly string[];
  /** Learns call ends and connection closes. */
  readonly observer: Observer;
  start(): Promise<void>;
  stop(): void;
}

export function fixedUpstreams(upstream: UpstreamUrl, grpcUpstream: UpstreamUrl | undefined): Upstreams {
  const known = [upstream.authority, ...(grpcUpstream ? [grpcUpstream.authority] : [])];
  return {
    pick: (_call, _conn, grpcFamily) => (grpcFamily && grpcUpstream) || upstream,
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
  private readonly byCall = new WeakMap<CallRecord, Endpoint>();
  private timer: NodeJS.Timeout | undefined;
  readonly observer: Observer;

  constructor(readonly opts: BalancedOptions) {
    this.observer = {
      ...noopObserver,
      callEnded: (call) => this.callEnded(call),
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

  pick(call: CallRecord, connectionId: number): UpstreamUrl | undefined {
    const now = performance.now();
    let candidates = this.usable.filter((e) => e.usable(now));
    // Every endpoint backing off: try the one whose back-off ends first rather than fail the call.
    if (candidates.length === 0 && this.usable.length > 0) candidates = [this.usable.reduce((a, b) => (a.retryAt <= b.retryAt ? a : b))];
    if (candidates.length === 0) return undefined;
    const e = this.opts.picker.pick(candidates, connectionId);
    e.active++;
    e.calls++;
    this.byCall.set(call, e);
    return e.target;
  }

  private callEnded(call: CallRecord): void {
    const e = this.byCall.get(call);
    if (!e) return;
    const now = performance.now();
    const latency = call.upstreamUnreachable || call.upstreamStartTime === undefined ? undefined : (call.upstreamEndTime ?? call.endTime) - call.upstreamStartTime;
    e.finished(now, latency);
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
      this.endpoints.set(target.authority, new Endpoint(target.authority, target));
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
