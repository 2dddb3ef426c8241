// Calls the relay sends on a connection of its own — a session of the
// terminating path's pool (upstream/h2-session-pool.ts) — instead of the relayed
// upstream's: new calls once the upstream went away gracefully (its GOAWAY kept
// from the client), and a call the upstream refused unprocessed, sent once more
// as the terminating path retries (upstream/upstream-retries.ts). The request is
// written anew from its decoded headers and held body; the answer goes back to
// the client on the call's own stream id as frames of the relay's own (through
// the client writer): header blocks as literals without indexing, so the
// client's table stays the relayed upstream's, and DATA within the client's
// windows, only while the client reads.
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { PooledSession } from '../upstream/h2-session-pool.ts';
import { fieldsFromRaw } from '../protocol/hop-by-hop.ts';
import { NodeErrorCode } from '../core/errors.ts';
import type { ClientWriter } from './client-writer.ts';
import { DEFAULT_MAX_FRAME_SIZE, Flag } from '../h2/frame-types.ts';
import { dataFrame, headerBlockFrames, rstStreamFrame, windowUpdateFrame } from '../h2/frames.ts';
import { replyFrames } from './local-endings.ts';
import { refusal, type RetryReason } from '../upstream/upstream-retries.ts';
import type { RelayCalls } from './relay-calls.ts';
import type { Phase } from './relay-phase.ts';
import { DetourStream, type Piece, type RelayStream } from './relay-stream.ts';

/** An answer from another connection held for the client's windows: past it, that connection waits. */
const MAX_OUT_BYTES = 64 * 1024;

const EMPTY = Buffer.alloc(0);

/** What the detour reads of the connection whose calls it sends (relay-connection.ts). */
export interface DetourHost {
  readonly phase: Phase;
  /** The last stream id of the upstream's GOAWAY. */
  readonly upstreamLast: number | undefined;
}

export class RelayDetour {
  /** Streams whose answer has pieces waiting. */
  private readonly sending = new Map<number, DetourStream>();

  constructor(private readonly ctx: ProxyContext, private readonly target: UpstreamUrl, private readonly writer: ClientWriter, private readonly calls: RelayCalls, private readonly host: DetourHost) {}

  /** Answers have pieces waiting. */
  get busy(): boolean {
    return this.sending.size > 0;
  }

  /**
   * The upstream refused the call unprocessed (a stream above its GOAWAY's last
   * stream id, or REFUSED_STREAM before any response), and the whole request is
   * held: it is sent once more, on a connection of the relay's own, as the
   * terminating path retries (upstream/upstream-retries.ts).
   */
  retry(id: number, stream: RelayStream, reason: RetryReason): void {
    (stream.detour ??= new DetourStream(id, stream, this.sending)).retried = true;
    this.ctx.retries.retried(reason);
    this.ctx.log.debug('the upstream refused a call unprocessed; sending it again', { upstream: this.target.authority, reason, streamId: id, goawayLastStreamId: this.host.upstreamLast });
    this.forward(id, stream);
  }

  /**
   * Sends a call on a session of the pool: the request written anew, the answer
   * queued for the client (`queue`). The client's further DATA follows (`write`),
   * and the relay opens the stream's window again itself, as the upstream would
   * have. A call the pool's session refuses unprocessed is sent once more, if it
   * was not already.
   */
  forward(id: number, stream: RelayStream): void {
    const { call } = stream;
    const { tap, record } = call;
    const d = (stream.detour ??= new DetourStream(id, stream, this.sending));
    d.via = undefined;
    d.out = [];
    const body = stream.body ?? [];
    const endStream = stream.requestEnded && stream.bodyBytes === 0;
    let pooled: PooledSession;
    let up: http2.ClientHttp2Stream;
    try {
      pooled = this.ctx.h2.get(this.target);
      up = pooled.session.request(requestHeaders(stream.request ?? [], this.target, call.traceparent), { endStream });
    } catch (err) {
      record.upstreamUnreachable = true;
      return this.answer(d, `upstream unavailable: ${(err as Error).message}`);
    }
    d.via = up;
    pooled.conn.calls++;
    pooled.conn.active++;
    if (!endStream) {
      // The held body's window credit, stream only: the relayed upstream read those frames and kept the connection's.
      for (const chunk of body) this.write(id, up, chunk, false);
      if (stream.requestEnded) up.end();
    }
    let error: (Error & { code?: string }) | undefined;
    let trailers: [string, string][] | undefined;
    let endSeen = false;
    up.on('error', (err) => (error = err));
    // Node hands each header block's raw fields over as a third argument, which its type definitions leave out.
    up.on('response', (h, flags, raw?: string[]) => {
      if (d.via !== up) return;
      this.calls.dropBody(stream);
      stream.request = undefined;
      stream.responseHeaders(h as Record<string, string | string[]>, pooled.connectedAt);
      this.queue(d, { kind: 'headers', fields: pairs(raw, h), end: (flags & Flag.END_STREAM) !== 0 });
    });
    up.on('data', (chunk: Buffer) => {
      if (d.via !== up) return;
      tap.responseData(chunk);
      this.queue(d, { kind: 'data', bytes: chunk, end: false });
      if (d.outBytes > MAX_OUT_BYTES) up.pause();
    });
    up.on('trailers', (t, _flags, raw?: string[]) => {
      tap.responseTrailers(t);
      trailers = pairs(raw, t);
    });
    up.on('end', () => (endSeen = true));
    up.on('close', () => {
      pooled.conn.active--;
      if (d.via !== up || this.calls.streams.get(id) !== stream) return;
      const code = up.rstCode ?? Http2Error.INTERNAL_ERROR;
      if (endSeen && code === Http2Error.NO_ERROR) {
        record.upstreamEndTime = now();
        return this.queue(d, trailers ? { kind: 'headers', fields: trailers, end: true } : { kind: 'data', bytes: EMPTY, end: true });
      }
      const reason = !stream.responded && !d.retried && pooled.connected && stream.body ? refusal(pooled, up, code, error) : undefined;
      if (reason) return this.retry(id, stream, reason);
      if (!stream.responded && !pooled.connected) {
        record.upstreamUnreachable = true;
        return this.answer(d, `upstream unavailable: ${error?.code ?? error?.message ?? 'connection failed'}`);
      }
      const refused = !stream.responded && error?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION;
      this.queue(d, { kind: 'rst', code: refused ? Http2Error.REFUSED_STREAM : code, reset: { side: 'upstream', code: refused ? Http2Error.REFUSED_STREAM : code } });
    });
  }

  /**
   * Writes request body toward a call sent here, and opens the client's windows
   * again by as much only once that connection has taken it (its write callback):
   * a client whose app reads nothing stops at its windows, never filling the
   * relay. `connection`: the connection's window is the relay's to open too
   * (detached), not the relayed upstream's.
   */
  write(id: number, via: http2.ClientHttp2Stream, chunk: Buffer, connection: boolean): void {
    // Also on an error: the octets are gone either way, and the connection's window must not shrink by them.
    via.write(chunk, () => this.credit(id, chunk.length, connection));
  }

  /** Opens the client's window for stream `id` (and the connection's, with `connection`) by `n` octets. */
  credit(id: number, n: number, connection: boolean): void {
    if (this.host.phase === 'closed') return;
    // Both WINDOW_UPDATEs in one write.
    this.writer.cork();
    if (connection) this.writer.send(windowUpdateFrame(0, n));
    if (this.calls.streams.has(id)) this.writer.send(windowUpdateFrame(id, n));
    this.writer.uncork();
  }

  /** A call sent here whose client read the upstream's reset after all (it could not be hidden): it is over. */
  abandon(id: number, stream: RelayStream): void {
    this.calls.end(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
  }

  /** A call sent here the relay answers UNAVAILABLE itself: no session could take it. */
  private answer(d: DetourStream, reason: string): void {
    const { fields, body } = replyFrames(d.stream, GrpcCode.UNAVAILABLE, reason);
    this.queue(d, { kind: 'headers', fields, end: !body });
    if (body) {
      d.stream.call.tap.responseData(body);
      this.queue(d, { kind: 'data', bytes: body, end: true });
    }
  }

  private queue(d: DetourStream, piece: Piece): void {
    if (d.outEnded) return;
    if (piece.kind !== 'data' ? piece.kind === 'rst' || piece.end : piece.end) d.outEnded = true;
    if (piece.kind === 'data') d.outBytes += piece.bytes.length;
    d.out.push(piece);
    this.sending.set(d.id, d);
    this.flushOut();
  }

  /**
   * Writes the answers' pieces the client's windows take, where a frame may be
   * added, and while the client reads: a client's windows may be as large as it
   * likes, and one that opens them and reads nothing would otherwise have the
   * relay hold the whole answer. Past the writer's bound the rest waits for the
   * socket's 'drain' (and the calls' own streams, paused at MAX_OUT_BYTES, wait
   * with it). DATA written while the upstream still keeps the connection's window
   * is owed to it (ClientWriter, `debt`).
   */
  flushOut(): void {
    const { host, writer, calls } = this;
    if ((host.phase !== 'open' && host.phase !== 'detached') || !writer.canAdd()) return;
    writer.cork();
    writer.flush();
    for (const d of this.sending.values()) {
      const { id, stream } = d;
      let done: Piece | undefined;
      while (d.out.length > 0 && !writer.full) {
        const p = d.out[0]!;
        if (p.kind === 'data' && p.bytes.length > 0) {
          const room = writer.room(stream);
          if (room <= 0) break;
          const piece = p.bytes.subarray(0, room);
          const whole = piece.length === p.bytes.length;
          d.outBytes -= piece.length;
          writer.writeData(id, stream, piece, whole && p.end, host.phase === 'open');
          if (!whole) {
            p.bytes = p.bytes.subarray(room);
            continue;
          }
        } else if (p.kind === 'data') writer.write(dataFrame(id, p.bytes, p.end));
        else if (p.kind === 'headers') writer.write(headerBlockFrames(id, writer.block(p.fields), p.end, DEFAULT_MAX_FRAME_SIZE));
        else writer.write(rstStreamFrame(id, p.code));
        d.out.shift();
        if (p.kind === 'rst' || p.end) done = p;
      }
      if (d.out.length === 0) this.sending.delete(id);
      if (d.outBytes <= MAX_OUT_BYTES / 2) d.via?.resume();
      if (done?.kind === 'rst') calls.end(id, stream, done.reset);
      else if (done) calls.responseComplete(id, stream);
    }
    writer.uncork();
  }
}

/** A decoded request (name, value, …) as node:http2's request headers, repeated fields kept apart, hop-by-hop ones left out as the terminating path does. */
function requestHeaders(list: readonly string[], target: UpstreamUrl, traceparent: string | undefined): http2.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = { ':scheme': target.tls ? 'https' : 'http' };
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (name === ':method' || name === ':path' || name === ':authority') out[name] = list[i + 1]!;
  }
  out[':authority'] ??= target.authority;
  fieldsFromRaw(list, out, true);
  if (traceparent) out.traceparent = traceparent;
  return out;
}

/** A header block's fields in order: node:http2's raw list, or its object when the list is missing. */
function pairs(raw: readonly string[] | undefined, headers: http2.IncomingHttpHeaders): [string, string][] {
  const out: [string, string][] = [];
  if (raw) {
    for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
    return out;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.push([name, String(v)]);
  }
  return out;
}
