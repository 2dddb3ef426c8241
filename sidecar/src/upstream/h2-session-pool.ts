// HTTP/2 sessions toward upstreams: one live session per upstream address,
// replaced as soon as it is going away, so that new calls never land on a
// session the upstream has told to stop. A session whose upstream vanished
// without FIN or RST (its node died, the network partitioned) is found by its
// PING keepalive (h2/h2-keepalive.ts) and destroyed: its calls end
// UNAVAILABLE at once instead of hanging, and the next call opens a new one.
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Logger } from '../log.ts';
import type { ConnectionRecord, Observer } from '../call/observer.ts';
import { now } from '../clock.ts';
import type { ConnectFailureLog } from './connect-failure-log.ts';
import { nodeHttp2 } from '../builtins.ts';
import { ErrorCode, RpcscopeError, connectTimeout } from '../core/errors.ts';
import { keepNodeSessionAlive, type KeepaliveSettings } from '../h2/h2-keepalive.ts';

// Larger windows than HTTP/2's 64 KiB default keep big bodies moving on one
// round trip; nghttp2 still applies backpressure stream by stream.
const SETTINGS: http2.Settings = { initialWindowSize: 4 * 1024 * 1024, enablePush: false };
const SESSION_WINDOW = 16 * 1024 * 1024;

export interface PooledSession {
  readonly session: http2.ClientHttp2Session;
  readonly conn: ConnectionRecord;
  /** The upstream's href, as the pool keys it. */
  readonly target: string;
  /** The socket connected; a stream that fails before then found the upstream unreachable. */
  connected: boolean;
  /** When it connected (performance.now()). */
  connectedAt: number | undefined;
  /** The last stream id of the upstream's GOAWAY: streams above it were never processed. */
  goawayLastStreamId: number | undefined;
}

export interface UpstreamKeepalive {
  /** TCP keepalive on every upstream socket after this idle time; 0: off. */
  tcpIdleMs: number;
  /** PING keepalive of every session; undefined: sessions are not pinged (an inbound sidecar's app is in its own pod). */
  ping: KeepaliveSettings | undefined;
  /** A session's PING went unanswered: it was destroyed, and the balancer hears of it. */
  onTimeout(target: string): void;
}

const NO_KEEPALIVE: UpstreamKeepalive = { tcpIdleMs: 0, ping: undefined, onTimeout: () => {} };

export class H2SessionPool {
  private readonly live = new Map<string, PooledSession>();
  private readonly all = new Set<PooledSession>();
  private readonly ca: Buffer | undefined;

  constructor(
    private readonly observer: Observer,
    private readonly log: Logger,
    private readonly connectTimeoutMs: number,
    /** The --upstream-ca bundle, read once at start (pipeline.ts). */
    ca: Buffer | undefined,
    private readonly nextConnId: () => number,
    private readonly connectFailures: ConnectFailureLog,
    private readonly keepalive: UpstreamKeepalive = NO_KEEPALIVE,
  ) {
    this.ca = ca;
  }

  get(target: UpstreamUrl): PooledSession {
    const current = this.live.get(target.href);
    if (current && !current.session.closed && !current.session.destroyed) return current;
    return this.open(target);
  }

  private open(target: UpstreamUrl): PooledSession {
    const tcpKeepalive = this.keepalive.tcpIdleMs > 0 ? { keepAlive: true, keepAliveInitialDelay: this.keepalive.tcpIdleMs } : {};
    const session = nodeHttp2().connect(target.href, {
      settings: SETTINGS,
      // Passed on to net.connect (and tls.connect): the kernel probes an idle socket, a backstop under the PINGs.
      ...tcpKeepalive,
      ...(target.tls ? { ca: this.ca, ALPNProtocols: ['h2'], servername: target.host } : {}),
    });
    const conn: ConnectionRecord = { id: this.nextConnId(), side: 'upstream', httpVersion: '2', peer: target.authority, openTime: now(), closeTime: 0, calls: 0, active: 0 };
    const pooled: PooledSession = { session, conn, target: target.href, connected: false, connectedAt: undefined, goawayLastStreamId: undefined };
    this.live.set(target.href, pooled);
    this.all.add(pooled);
    const retire = () => {
      if (this.live.get(target.href) === pooled) this.live.delete(target.href);
    };
    const timer = setTimeout(() => {
      if (!pooled.connected) session.destroy(connectTimeout(this.connectTimeoutMs));
    }, this.connectTimeoutMs);
    session.once('connect', () => {
      clearTimeout(timer);
      pooled.connected = true;
      pooled.connectedAt = now();
      session.setLocalWindowSize(SESSION_WINDOW);
      this.observer.connectionOpened(conn);
    });
    const ping = this.keepalive.ping;
    if (ping) {
      keepNodeSessionAlive(session, ping, () => {
        retire();
        this.log.warn('upstream connection closed: no answer to PING within --keepalive-timeout', { upstream: target.authority, timeoutMs: ping.timeoutMs });
        // Its streams close with this error; the forwarders answer their calls UNAVAILABLE (503).
        session.destroy(new RpcscopeError(ErrorCode.KEEPALIVE_TIMEOUT, `no answer to PING from ${target.authority} within ${ping.timeoutMs} ms`));
        this.keepalive.onTimeout(target.href);
      });
    }
    session.on('goaway', (code, lastStreamId) => {
      pooled.goawayLastStreamId = lastStreamId;
      retire();
      this.observer.goaway('upstream', code);
      this.log.debug('upstream sent GOAWAY', { upstream: conn.peer, code });
    });
    session.on('error', (err) => {
      retire();
      if (!pooled.connected) this.connectFailures.report(target.authority, err);
      this.log.debug('upstream session error', { upstream: target.authority, error: err.message });
    });
    session.on('close', () => {
      clearTimeout(timer);
      retire();
      this.all.delete(pooled);
      if (pooled.connected) {
        conn.closeTime = now();
        this.observer.connectionClosed(conn);
      }
    });
    return pooled;
  }

  /** An endpoint is gone: close its sessions once their streams are done. */
  closeTarget(target: UpstreamUrl): void {
    for (const p of this.all) if (p.target === target.href) p.session.close();
    this.live.delete(target.href);
  }

  /** Close every session once its streams are done. */
  close(): void {
    for (const p of this.all) p.session.close();
  }
}
