// The relayed connection's own upstream connection: TCP, or TLS verified against
// --upstream-ca that must agree by ALPN (RFC 7301) on the protocol the relay
// passes: HTTP/2 frames and nothing else for the HTTP/2 relay; HTTP/1.1 for the
// HTTP/1.1 relay, where a server that agrees on no protocol speaks HTTP/1.1 (HTTP/2
// over TLS is only ever negotiated, RFC 9113 §3.2); within --connect-timeout. A failure is the socket's 'error', as any later one is.
// Its record (UpstreamLink) is what observers count of it, from up to gone.
import net from 'node:net';
import type tls from 'node:tls';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord, Observer } from '../call/observer.ts';
import { nodeTls } from '../builtins.ts';
import { now } from '../clock.ts';
import { ErrorCode, RpcscopeError, connectTimeout } from '../core/errors.ts';

/**
 * Connects to `target`; `connected` once the connection is up (over TLS, with
 * `alpn` agreed). `onread`: over TCP, the socket's reads go there instead of its
 * 'data' events (read-slab.ts); over TLS they come as 'data' still.
 */
export function connectUpstream(target: UpstreamUrl, ca: Buffer | undefined, timeoutMs: number, connected: () => void, alpn: 'h2' | 'http/1.1' = 'h2', onread?: net.OnReadOpts): net.Socket {
  const up = target.tls
    ? nodeTls().connect({ host: target.host, port: target.port, ALPNProtocols: [alpn], servername: net.isIP(target.host) ? undefined : target.host, ca })
    : net.connect(onread ? { host: target.host, port: target.port, onread } : { host: target.host, port: target.port });
  // Frames go on as they come: Nagle's algorithm would hold a small request for the upstream's delayed ACK.
  up.setNoDelay(true);
  const timer = setTimeout(() => up.destroy(connectTimeout(timeoutMs)), timeoutMs);
  up.once(target.tls ? 'secureConnect' : 'connect', () => {
    clearTimeout(timer);
    const agreed = target.tls ? (up as tls.TLSSocket).alpnProtocol : alpn;
    if (alpn === 'h2' && agreed !== 'h2') {
      up.destroy(new RpcscopeError(ErrorCode.ALPN_NOT_H2, 'upstream did not agree to HTTP/2 (ALPN h2)'));
      return;
    }
    if (alpn === 'http/1.1' && agreed !== alpn && agreed !== false) {
      up.destroy(new RpcscopeError(ErrorCode.ALPN_NOT_HTTP1, `upstream agreed to ${String(agreed)} by ALPN, not HTTP/1.1: the HTTP/1.1 relay passes HTTP/1.1 only`));
      return;
    }
    connected();
  });
  up.on('error', () => clearTimeout(timer));
  return up;
}

/** The upstream connection's record: the calls it carried, and when it came up and went. */
export class UpstreamLink {
  readonly record: ConnectionRecord;
  /** When the connection came up: a call that waited for it reached the upstream only then. */
  connectedAt: number | undefined;

  constructor(private readonly observer: Observer, id: number, authority: string) {
    this.record = { id, side: 'upstream', httpVersion: '2', peer: authority, openTime: 0, closeTime: 0, calls: 0, active: 0 };
  }

  /** The connection is up: counted open. */
  opened(): void {
    this.connectedAt = this.record.openTime = now();
    this.observer.connectionOpened(this.record);
  }

  /** The connection that was up is gone: counted closed. */
  closed(): void {
    this.record.closeTime = now();
    this.observer.connectionClosed(this.record);
  }
}
