// The relayed connection's own upstream connection: TCP, or TLS that must agree
// on HTTP/2 by ALPN (the relay passes HTTP/2 frames and nothing else), within
// --connect-timeout. A failure is the socket's 'error', as any later one is.
// Its record (UpstreamLink) is what observers count of it, from up to gone.
import net from 'node:net';
import type tls from 'node:tls';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord, Observer } from '../call/observer.ts';
import { nodeTls } from '../builtins.ts';
import { now } from '../clock.ts';
import { ErrorCode, RpcscopeError, connectTimeout } from '../core/errors.ts';

/** Connects to `target`; `connected` once the connection is up (over TLS, with h2 agreed). */
export function connectUpstream(target: UpstreamUrl, ca: Buffer | undefined, timeoutMs: number, connected: () => void): net.Socket {
  const up = target.tls
    ? nodeTls().connect({ host: target.host, port: target.port, ALPNProtocols: ['h2'], servername: net.isIP(target.host) ? undefined : target.host, ca })
    : net.connect({ host: target.host, port: target.port });
  // Frames go on as they come: Nagle's algorithm would hold a small request for the upstream's delayed ACK.
  up.setNoDelay(true);
  const timer = setTimeout(() => up.destroy(connectTimeout(timeoutMs)), timeoutMs);
  up.once(target.tls ? 'secureConnect' : 'connect', () => {
    clearTimeout(timer);
    if (target.tls && (up as tls.TLSSocket).alpnProtocol !== 'h2') {
      up.destroy(new RpcscopeError(ErrorCode.ALPN_NOT_H2, 'upstream did not agree to HTTP/2 (ALPN h2)'));
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
