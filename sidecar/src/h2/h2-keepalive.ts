// HTTP/2 PING keepalive for one connection, on either side and either data
// plane. A peer that vanishes without FIN or RST (its node died, the network
// partitioned) leaves a TCP connection "open" forever: nothing is read, writes
// pile up in the kernel, and calls on it hang. A PING is the one frame the peer
// must answer at once (RFC 9113 §6.7), so an unanswered one within the timeout
// says the peer is gone, as Envoy's connection_keepalive and grpc-go's keepalive
// parameters decide it.
//
// This object only keeps time and payloads; the connection's owner sends the
// frame and ends the connection (the PingPort). node:http2 sessions use
// session.ping() (nodeSessionPort below); the relay writes the PING frame itself
// at a frame boundary and hands every PING ACK it reads to acked(), which tells
// whether the ACK answers this keepalive's own PING — one the relay must not
// pass on, since the other side never sent it.
//
// Two refinements, both Envoy's: a PING goes out only after an interval in which
// nothing was read (a busy connection proves itself; grpc-go's client does the
// same), and anything read while the PING waits counts as an answer, so that an
// ACK queued behind a large response (head-of-line blocking) is not taken for a
// dead peer.

/** 8 octets (RFC 9113 §6.7); the first four mark the keepalive's own PINGs, the last four count them. */
const MAGIC = 0x72736b61; // 'rska'

export interface KeepaliveSettings {
  /** How long the connection may read nothing before a PING is sent; 0 turns keepalive off. */
  intervalMs: number;
  /** How long a PING may wait for its ACK (or any other byte) before the peer is taken for gone. */
  timeoutMs: number;
}

/** What the connection's owner does for the keepalive. */
export interface PingPort {
  /** Sends a PING carrying `opaque` (8 octets); false when none could be sent now (it is tried again next interval). */
  send(opaque: Buffer): boolean;
  /** Octets read from the peer so far: any progress is a sign of life. */
  bytesRead(): number;
  /** The PING went unanswered and nothing was read for the timeout: end the connection. */
  timedOut(): void;
}

export interface KeepaliveTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Runs `fn` after the I/O already waiting has been read (setImmediate). */
  afterIo(fn: () => void): void;
}

const NODE_TIMERS: KeepaliveTimers = {
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    // A keepalive never holds the process open (the drain decides when to exit).
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  afterIo: (fn) => void setImmediate(fn),
};

/** ±10 % around the interval, so that connections opened together (after a deploy) do not all PING at once. */
function jittered(ms: number, random: () => number): number {
  return ms * (0.9 + 0.2 * random());
}

export class H2Keepalive {
  private timer: unknown;
  private seq = 0;
  /** The sequence number of the PING waiting for its ACK, if one is. */
  private waiting: number | undefined;
  /** The PINGs sent and not yet acknowledged (a late ACK of an earlier one is still the keepalive's own). */
  private readonly unacked = new Set<number>();
  private readAtSend = 0;
  private lastRead = 0;
  private stopped = false;
  /** PINGs this keepalive sent, and ACKs of its own it saw: for tests and the debug view. */
  sent = 0;
  answered = 0;

  constructor(
    private readonly settings: KeepaliveSettings,
    private readonly port: PingPort,
    private readonly timers: KeepaliveTimers = NODE_TIMERS,
    private readonly random: () => number = Math.random,
  ) {}

  get enabled(): boolean {
    return this.settings.intervalMs > 0 && this.settings.timeoutMs > 0;
  }

  /** Starts the interval; call once the connection is up. */
  start(): void {
    if (!this.enabled || this.stopped) return;
    this.lastRead = this.port.bytesRead();
    this.arm(jittered(this.settings.intervalMs, this.random), () => this.tick());
  }

  /** The connection closed: no more timers. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * A PING ACK arrived carrying `payload`: true when it answers one of this
   * keepalive's own PINGs. The relay drops such an ACK rather than pass it on.
   */
  acked(payload: Buffer): boolean {
    const seq = ownSequence(payload);
    if (seq === undefined || !this.unacked.delete(seq)) return false;
    this.answered++;
    if (seq === this.waiting) {
      this.waiting = undefined;
      this.lastRead = this.port.bytesRead();
      this.arm(jittered(this.settings.intervalMs, this.random), () => this.tick());
    }
    return true;
  }

  private arm(ms: number, fn: () => void): void {
    if (this.stopped) return;
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer);
    this.timer = this.timers.setTimeout(fn, ms);
  }

  /** The interval is up: a connection that read something since proves itself; a quiet one is asked. */
  private tick(): void {
    this.timer = undefined;
    const read = this.port.bytesRead();
    if (read !== this.lastRead) {
      this.lastRead = read;
      return this.arm(jittered(this.settings.intervalMs, this.random), () => this.tick());
    }
    const seq = (this.seq = (this.seq + 1) >>> 0);
    const opaque = Buffer.alloc(8);
    opaque.writeUInt32BE(MAGIC, 0);
    opaque.writeUInt32BE(seq, 4);
    if (!this.port.send(opaque)) return this.arm(jittered(this.settings.intervalMs, this.random), () => this.tick());
    this.sent++;
    this.waiting = seq;
    this.unacked.add(seq);
    // At most a few late ACKs are remembered: a peer that never answers must not grow the set.
    if (this.unacked.size > 4) this.unacked.delete(this.unacked.values().next().value!);
    this.readAtSend = read;
    this.arm(this.settings.timeoutMs, () => this.expire(seq));
  }

  private expire(seq: number): void {
    this.timer = undefined;
    // Timers run before the poll phase: after a stalled event loop the ACK may be
    // waiting unread in the socket. Deciding after the I/O phase reads it first,
    // so a stall of the sidecar's own is never taken for a dead peer.
    this.timers.afterIo(() => {
      if (this.stopped || this.waiting !== seq) return;
      const read = this.port.bytesRead();
      if (read !== this.readAtSend) {
        // Something arrived (the ACK may be queued behind it): alive. Its ACK is still the keepalive's own when it comes.
        this.waiting = undefined;
        this.lastRead = read;
        return this.arm(jittered(this.settings.intervalMs, this.random), () => this.tick());
      }
      this.stop();
      this.port.timedOut();
    });
  }
}

/** The sequence number of a keepalive PING's payload, or undefined when the payload is not one of ours. */
function ownSequence(payload: Buffer): number | undefined {
  if (payload.length !== 8 || payload.readUInt32BE(0) !== MAGIC) return undefined;
  return payload.readUInt32BE(4);
}

/** What keepNodeSessionAlive needs of a node:http2 session (client or server). */
export interface PingableSession {
  ping(payload: Buffer, callback: (err: Error | null, duration: number, payload: Buffer) => void): boolean;
  readonly socket: { bytesRead: number } | undefined;
  readonly destroyed: boolean;
  readonly connecting?: boolean;
  once(event: 'connect' | 'close', listener: () => void): unknown;
}

/**
 * Keeps a node:http2 session alive: PINGs from the moment it connects until it
 * closes; `timedOut` ends it. Node writes each PING and matches its ACK to the
 * callback (whose payload the keepalive checks); the session's socket counts
 * the octets read.
 */
export function keepNodeSessionAlive(session: PingableSession, settings: KeepaliveSettings, timedOut: () => void, timers?: KeepaliveTimers): H2Keepalive {
  const port: PingPort = {
    send: (opaque) => {
      if (session.destroyed) return false;
      try {
        // A session closed before the ACK calls back with an error, which is no answer.
        return session.ping(opaque, (err, _duration, payload) => {
          if (!err) keepalive.acked(payload);
        });
      } catch {
        // ERR_HTTP2_INVALID_SESSION and the like: the session is ending anyway.
        return false;
      }
    },
    bytesRead: () => session.socket?.bytesRead ?? 0,
    timedOut,
  };
  const keepalive = new H2Keepalive(settings, port, timers);
  if (!keepalive.enabled) return keepalive;
  session.once('close', () => keepalive.stop());
  if (session.connecting === true) session.once('connect', () => keepalive.start());
  else keepalive.start();
  return keepalive;
}
