// The states of the client's streams (RFC 9113 §5.1) that the relay answers
// for itself, whatever app is behind it: the app would answer most of them too,
// but not alike (Node's HTTP/2 core, under most gRPC and REST apps in Node, ends
// the connection with INTERNAL_ERROR, or reads on in silence), and a frame on a
// stream the relay's own calls table has forgotten must not reach the app as if
// it opened one. The open calls stay in relay-calls.ts; this keeps what is known
// of the streams around them — the highest id the client opened, the ids it
// skipped, and the streams it ended itself — in two small rings, read only when
// a frame names a stream that is no open call, never per DATA frame of a call.
//
// The answers, by the client frame and the stream's state. Each one is a
// connection error (GOAWAY, then close): a stream error may be one (§5.4.1), and
// the frame is then never passed on as if valid. "Pass" means the frame goes on
// and the app answers (a frame on a stream the relay or the app ended may still
// be in flight, and must be ignored: §5.1 "closed").
//
// | frame          | idle: odd id above the last opened        | skipped: below it, never opened | ended by the client (END_STREAM or RST_STREAM) |
// |----------------|-------------------------------------------|---------------------------------|------------------------------------------------|
// | HEADERS        | opens the stream (§5.1.1; even: PROTOCOL_ERROR) | PROTOCOL_ERROR (§5.1.1)    | STREAM_CLOSED (§5.1 half-closed (remote), closed) |
// | DATA           | PROTOCOL_ERROR (§5.1 idle, §6.1)          | pass                            | STREAM_CLOSED (§5.1, §6.1)                     |
// | RST_STREAM     | PROTOCOL_ERROR (§6.4)                     | pass                            | pass                                           |
// | WINDOW_UPDATE  | PROTOCOL_ERROR (§5.1 idle)                | pass                            | pass (§5.1 half-closed (remote) allows it)     |
//
// https://www.rfc-editor.org/rfc/rfc9113#section-5.1, #section-5.1.1, #section-6.1, #section-6.4
import { Http2Error } from '../protocol/reset-codes.ts';
import { FrameError } from './frame-parser.ts';

/** How many ended streams and skipped ranges are remembered: past them, a frame on an old stream is passed on for the app to answer. */
const REMEMBERED = 64;

export class ClientStreamStates {
  /** The highest stream id the client opened (§5.1.1): every id above it (odd) is idle. */
  last = 0;
  /** Ids of streams the client ended, newest last, in a ring; made when the first ends. */
  private ended: Int32Array | undefined;
  private endedNext = 0;
  /** Ranges of ids the client skipped ([from, to] pairs), in a ring; made when it first skips. */
  private skipped: Int32Array | undefined;
  private skippedNext = 0;

  /**
   * A header block on `id`, which is no open call: true if it opens a new stream,
   * false if it belongs to one over (passed on). Throws the connection error the
   * table above gives.
   */
  opening(id: number): boolean {
    if (id > this.last) {
      if ((id & 1) === 0) throw new FrameError(Http2Error.PROTOCOL_ERROR, 'client opened an even-numbered stream (RFC 9113 §5.1.1)');
      // The first stream is 1 or above, each next one 2 above the last.
      const next = this.last === 0 ? 1 : this.last + 2;
      if (id > next) this.skip(next, id - 2);
      this.last = id;
      return true;
    }
    if (this.wasSkipped(id)) throw new FrameError(Http2Error.PROTOCOL_ERROR, `stream ${id} opened after stream ${this.last}: ids must grow (RFC 9113 §5.1.1)`);
    this.closedByClient(id, 'HEADERS');
    return false;
  }

  /** DATA on `id`; `call`: its open call, if it is one. */
  data(id: number, call: { requestEnded: boolean } | undefined): void {
    if (call) {
      if (call.requestEnded) this.afterEnd(id, 'DATA');
      return;
    }
    this.idle(id, 'DATA');
    this.closedByClient(id, 'DATA');
  }

  /** RST_STREAM or WINDOW_UPDATE on `id`, which is no open call. */
  control(id: number, what: 'RST_STREAM' | 'WINDOW_UPDATE'): void {
    this.idle(id, what);
  }

  /** A frame on an open call whose request the client had already ended (§5.1 half-closed (remote)). */
  afterEnd(id: number, what: 'DATA' | 'HEADERS'): never {
    throw new FrameError(Http2Error.STREAM_CLOSED, `${what} on stream ${id} after the client's END_STREAM (RFC 9113 §5.1)`);
  }

  /** The client ended its side of `id` (END_STREAM or RST_STREAM): it may send no more DATA or HEADERS there. */
  clientEnded(id: number): void {
    const ring = (this.ended ??= new Int32Array(REMEMBERED));
    if (this.endedNext > 0 && ring[(this.endedNext - 1) % REMEMBERED] === id) return;
    ring[this.endedNext++ % REMEMBERED] = id;
  }

  private idle(id: number, what: string): void {
    if (id > this.last && (id & 1) === 1) throw new FrameError(Http2Error.PROTOCOL_ERROR, `${what} on idle stream ${id} (RFC 9113 §5.1)`);
  }

  private closedByClient(id: number, what: string): void {
    const ring = this.ended;
    if (!ring) return;
    for (let i = Math.max(0, this.endedNext - REMEMBERED); i < this.endedNext; i++) {
      if (ring[i % REMEMBERED] === id) throw new FrameError(Http2Error.STREAM_CLOSED, `${what} on stream ${id}, which the client ended (RFC 9113 §5.1)`);
    }
  }

  private skip(from: number, to: number): void {
    const ring = (this.skipped ??= new Int32Array(2 * REMEMBERED));
    const at = (this.skippedNext++ % REMEMBERED) * 2;
    ring[at] = from;
    ring[at + 1] = to;
  }

  private wasSkipped(id: number): boolean {
    const ring = this.skipped;
    if (!ring) return false;
    for (let i = Math.max(0, this.skippedNext - REMEMBERED); i < this.skippedNext; i++) {
      if (id >= ring[(i % REMEMBERED) * 2]! && id <= ring[(i % REMEMBERED) * 2 + 1]!) return true;
    }
    return false;
  }
}
