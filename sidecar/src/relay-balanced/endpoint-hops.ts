// The balanced relay's connections to the endpoints, shared by every client
// connection: per endpoint, the HTTP/2 connections open to it, a new one made when
// each holds as many streams as the endpoint allows (SETTINGS_MAX_CONCURRENT_STREAMS,
// RFC 9113 §5.1.2) or has said GOAWAY (§6.8). A stream opened before the
// connection is up waits in its socket's queue and goes once it is. An endpoint
// that vanishes without FIN or RST is found by PING (--keepalive-interval,
// --keepalive-timeout): its connection is closed, its calls end UNAVAILABLE, and
// the balancer takes it out of rotation.
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { HeaderList } from '../relay/hpack-decoder.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { slabReads } from '../relay/read-slab.ts';
import { UpstreamLink, connectUpstream } from '../relay/upstream-connect.ts';
import { StreamTable } from './stream-table.ts';
import { H2Keepalive } from '../h2/h2-keepalive.ts';
import { H2Hop, type HopStream, type StreamSink } from './h2-hop.ts';

/** What an endpoint connection gives: streams of 1 MiB, the connection credited on receipt (h2-hop.ts), 16 MiB. */
const ENDPOINT_WINDOWS = { stream: 1024 * 1024, connection: 16 * 1024 * 1024, creditOnReceipt: true } as const;

/** What a call on an endpoint connection hears of the connection as a whole. */
export interface EndpointStreamSink extends StreamSink {
  /** The connection is gone (`reached`: it was up) before the stream ended. */
  lost(reached: boolean, error: Error | undefined): void;
  /** The endpoint's GOAWAY left this stream out: it was never worked on (RFC 9113 §6.8). */
  refused(): void;
}

/** One endpoint connection and what is known of it. */
export class EndpointHop {
  readonly hop: H2Hop;
  readonly link: UpstreamLink;
  connected = false;
  private readonly sinks = new StreamTable<EndpointStreamSink>();
  /** PINGs after --keepalive-interval of silence; no answer within --keepalive-timeout closes the connection (h2/h2-keepalive.ts). */
  private readonly keepalive: H2Keepalive;

  constructor(private readonly ctx: ProxyContext, readonly target: UpstreamUrl, private readonly retire: (e: EndpointHop) => void) {
    this.link = new UpstreamLink(ctx.observer, ctx.nextConnId(), target.authority);
    // Over TCP the socket reads into slabs (relay/read-slab.ts); over TLS its 'data' events reach the hop.
    const socket = connectUpstream(target, ctx.upstreamCa, ctx.config.connectTimeoutMs, () => this.up(), 'h2', slabReads((chunk) => this.hop.read(chunk)));
    this.hop = new H2Hop(socket, 'client', {
      opened: () => undefined,
      settled: () => {},
      goaway: (last, code) => this.goaway(last, code),
      closed: (err) => this.closed(err),
      pong: (payload) => void this.keepalive.acked(payload),
    }, ENDPOINT_WINDOWS);
    const { keepaliveIntervalMs: intervalMs, keepaliveTimeoutMs: timeoutMs } = ctx.config;
    this.keepalive = new H2Keepalive({ intervalMs, timeoutMs }, {
      send: (opaque) => {
        this.hop.ping(opaque);
        return true;
      },
      bytesRead: () => socket.bytesRead,
      timedOut: () => this.timedOut(timeoutMs),
    });
    this.hop.start();
  }

  get hasRoom(): boolean {
    return this.hop.hasRoom;
  }

  /** Opens a stream for a call: its request headers go now, or once the connection is up. */
  open(list: HeaderList, end: boolean, sink: EndpointStreamSink): HopStream {
    const s = this.hop.open(list, end, sink);
    this.sinks.set(s.id, sink);
    this.link.record.calls++;
    this.link.record.active++;
    return s;
  }

  /** The call on `s` is over here. */
  done(s: HopStream): void {
    if (this.sinks.delete(s.id)) this.link.record.active--;
  }

  private up(): void {
    this.connected = true;
    this.link.opened();
    this.hop.flush();
    this.keepalive.start();
  }

  /** The endpoint answered no PING in time: gone without FIN or RST. Its calls end UNAVAILABLE, and the balancer takes it out of rotation. */
  private timedOut(timeoutMs: number): void {
    this.ctx.faults.keepaliveTimedOut('upstream');
    this.ctx.upstreams.keepaliveTimedOut(this.target.href);
    this.ctx.log.warn('upstream connection closed: no answer to PING within --keepalive-timeout', { upstream: this.target.authority, timeoutMs });
    this.hop.destroy();
  }

  private goaway(last: number, code: number): void {
    this.ctx.observer.goaway('upstream', code);
    this.retire(this);
    for (const [id, sink] of this.sinks.entries()) {
      if (id <= last) continue;
      this.sinks.delete(id);
      this.link.record.active--;
      const s = this.hop.streams.get(id);
      if (s) this.hop.reset(s, Http2Error.CANCEL);
      sink.refused();
    }
    // Nothing left to finish: the connection goes now.
    if (this.sinks.size === 0) this.hop.end();
  }

  private closed(err: Error | undefined): void {
    this.keepalive.stop();
    this.retire(this);
    if (this.connected) this.link.closed();
    else if (err) this.ctx.connectFailures.report(this.target.authority, err);
    const sinks = this.sinks.values();
    this.sinks.clear();
    this.link.record.active = 0;
    for (const sink of sinks) sink.lost(this.connected, err);
  }

  /** Closes once its streams are done: GOAWAY now, the socket at the last stream's end. */
  close(): void {
    if (this.hop.closed) return;
    this.hop.goAway(Http2Error.NO_ERROR, 0);
    if (this.sinks.size === 0) this.hop.end();
  }

  /** A call ended: the connection closes once it was the last one on a connection going away. */
  idleCheck(): void {
    if (this.hop.goingAway && this.sinks.size === 0 && !this.hop.closed) this.hop.end();
  }

  destroy(): void {
    this.hop.destroy();
  }
}

export class EndpointHops {
  /** Per endpoint href, the connections taking new streams. */
  private readonly live = new Map<string, EndpointHop[]>();
  private readonly all = new Set<EndpointHop>();

  constructor(private readonly ctx: ProxyContext) {}

  /** A connection to `target` with room for one more stream, made when none has. */
  get(target: UpstreamUrl): EndpointHop {
    let list = this.live.get(target.href);
    if (list) for (const e of list) if (e.hasRoom) return e;
    const e = new EndpointHop(this.ctx, target, (gone) => this.retire(gone));
    if (!list) this.live.set(target.href, (list = []));
    list.push(e);
    this.all.add(e);
    e.hop.socket.once('close', () => this.all.delete(e));
    return e;
  }

  private retire(e: EndpointHop): void {
    const list = this.live.get(e.target.href);
    if (!list) return;
    const at = list.indexOf(e);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.live.delete(e.target.href);
  }

  /** An endpoint is gone: its connections close once their streams are done. */
  closeTarget(target: UpstreamUrl): void {
    for (const e of this.all) if (e.target.href === target.href) e.close();
    this.live.delete(target.href);
  }

  close(): void {
    for (const e of this.all) e.close();
    this.live.clear();
  }

  destroy(): void {
    for (const e of this.all) e.destroy();
  }
}
