// One upstream connection of the HTTP/1.1 relay, and the slot it holds at its
// endpoint's gate (upstream/endpoint-gate.ts) from the moment it is made until
// it closes: --upstream-max-connections bounds these connections, as it bounds
// the terminating path's calls in flight, and --upstream-max-connecting the ones
// being made. Its owner is the hold (h1-upstream-hold.ts) of the relayed client
// connection it serves; an idle one may be handed, slot and all, to the client
// connection of the first call waiting at the gate, whose hold becomes its owner
// (or kept by h1-idle-upstreams.ts, its owner meanwhile).
import type net from 'node:net';
import type { ConnectionRecord } from '../call/observer.ts';
import { now } from '../clock.ts';
import { ErrorCode, RpcscopeError } from '../core/errors.ts';
import { connectUpstream } from '../relay/upstream-connect.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { EndpointGate } from '../upstream/endpoint-gate.ts';
import { IDLE_UPSTREAM_SOCKET_MS } from '../upstream/h1-agent-pool.ts';

/** What the connection's owner hears of it. */
export interface H1UpstreamOwner {
  /** Connected (the first owner only). */
  opened(up: H1RelayUpstream): void;
  data(up: H1RelayUpstream, chunk: Buffer): void;
  /** The app closed its side (RFC 9112 §9.6). */
  ended(up: H1RelayUpstream): void;
  /** Nothing read or written for IDLE_UPSTREAM_SOCKET_MS. */
  idle(up: H1RelayUpstream): void;
  error(up: H1RelayUpstream, err: Error & { code?: string }): void;
  closed(up: H1RelayUpstream): void;
}

/**
 * The app's TLS refused ALPN http/1.1 (alert 120, no_application_protocol, RFC
 * 7301 §3.2): an app that speaks HTTP/2 only, said so in the caller's answer.
 */
function refusedHttp1(err: Error & { code?: string }): RpcscopeError | undefined {
  if (err.code !== 'ERR_SSL_TLSV1_ALERT_NO_APPLICATION_PROTOCOL' && !/alert no application protocol/.test(err.message)) return undefined;
  return new RpcscopeError(ErrorCode.ALPN_NOT_HTTP1, 'the upstream refused HTTP/1.1 by ALPN (it speaks HTTP/2 only; --upstream-protocol auto sends its HTTP/1.1 callers there over HTTP/2)');
}

export class H1RelayUpstream {
  readonly socket: net.Socket;
  readonly record: ConnectionRecord;

  constructor(ctx: ProxyContext, gate: EndpointGate<H1RelayUpstream>, public owner: H1UpstreamOwner | undefined) {
    const target = ctx.config.upstream;
    const record: ConnectionRecord = { id: ctx.nextConnId(), side: 'upstream', httpVersion: '1.1', peer: target.authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
    this.record = record;
    let made = (): void => {};
    const up = connectUpstream(target, ctx.upstreamCa, ctx.config.connectTimeoutMs, () => {
      made();
      record.openTime = now();
      ctx.observer.connectionOpened(record);
      this.owner?.opened(this);
    }, 'http/1.1');
    this.socket = up;
    // Counted once the connection is under way: a connect that throws takes no slot.
    gate.inFlight++;
    made = gate.connectStarted();
    up.on('data', (chunk: Buffer) => this.owner?.data(this, chunk));
    up.once('end', () => this.owner?.ended(this));
    // Idle past the terminating path's limit: closed before the app's own keep-alive timeout can race a request.
    // One that no client connection took up (its start failed) closes then too.
    up.setTimeout(IDLE_UPSTREAM_SOCKET_MS, () => (this.owner ? this.owner.idle(this) : up.destroy()));
    up.on('error', (err: Error & { code?: string }) => {
      // One warn line per unreachable upstream, whichever path failed to connect.
      const said = refusedHttp1(err) ?? err;
      if (!record.openTime) ctx.connectFailures.report(target.authority, said);
      this.owner?.error(this, said);
    });
    up.once('close', () => {
      made();
      gate.inFlight--;
      if (record.openTime) {
        record.closeTime = now();
        ctx.observer.connectionClosed(record);
      }
      this.owner?.closed(this);
      gate.drain();
    });
  }

  /** Whether it may carry another request: connected, open both ways, nothing left to write. */
  get reusable(): boolean {
    const s = this.socket;
    return this.record.openTime > 0 && !s.destroyed && s.readable && s.writable && s.writableLength === 0;
  }
}
