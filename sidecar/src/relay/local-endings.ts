// The endings the relay gives calls itself: a stream it will not take, a
// request header list or request trailers over the size, a deadline passed, an upstream that could not be
// reached or whose connection broke under the call. An answer is the
// terminating path's, in the call's own protocol (protocol/local-reply.ts); all of
// it goes as whole frames of the relay's own (client-writer.ts,
// upstream-writer.ts), header blocks of literals without indexing, so that the
// client's table stays as the upstream left it.
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import type { ClientWriter } from './client-writer.ts';
import { headerListRefusal } from './frame-budget.ts';
import { EMPTY_SETTINGS, SETTINGS_ACK, dataFrame, headersFrame, rstStreamFrame } from '../h2/frames.ts';
import type { HeaderList } from './hpack-decoder.ts';
import type { RelayCalls, Reset } from './relay-calls.ts';
import type { RelayStream } from './relay-stream.ts';
import type { UpstreamWriter } from './upstream-writer.ts';

/** The relay's own answer to a call: its header block's fields and its body, if any. */
export interface LocalFrames {
  fields: [string, string][];
  body: Buffer | undefined;
}

/**
 * The answer the relay gives a call itself (localReply, in the call's protocol,
 * with the request's content-type): told to the call's tap as its response
 * headers, the stream then counted as answered. Where its frames go, and when
 * its body is told, is the caller's.
 */
export function replyFrames(stream: RelayStream, code: LocalCode, message: string): LocalFrames {
  const { record, tap } = stream.call;
  const r = localReply(record.protocol, record.framed, stream.contentType, code, message);
  tap.responseHeaders(r.status, r.headers);
  stream.responded = true;
  return { fields: [[':status', String(r.status)], ...Object.entries(r.headers)], body: r.body };
}

export class LocalEndings {
  /** Why calls are answered UNAVAILABLE, once the upstream could not be reached. */
  private unreachableReason = '';

  constructor(
    private readonly ctx: ProxyContext,
    private readonly conn: ConnectionRecord,
    private readonly target: UpstreamUrl,
    private readonly writer: ClientWriter,
    private readonly toUpstream: UpstreamWriter,
    private readonly calls: RelayCalls,
  ) {}

  /**
   * A new stream the relay will not take: its HEADERS still reach the upstream
   * where they must (its HPACK table follows the client's), then RST_STREAM
   * CANCEL; the client gets REFUSED_STREAM, which tells it the stream was never
   * worked on and may be sent again (RFC 9113 §8.7).
   */
  refuse(id: number, flags: number, block: Buffer, list: HeaderList): void {
    if (this.toUpstream.rewrite(id, flags, block, list, undefined)) this.toUpstream.send(rstStreamFrame(id, Http2Error.CANCEL));
    this.writer.send(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
  }

  /**
   * A request header list over the size: 431, as when terminating
   * (frame-budget.ts). The upstream got the block (its table must stay in step)
   * and is told to drop it once the bytes being read have passed; in translate
   * mode the block never reached it.
   */
  refuseHeaderList(id: number, translate: boolean): void {
    if (!translate) this.toUpstream.after(rstStreamFrame(id, Http2Error.CANCEL));
    for (const f of headerListRefusal(id, this.writer.block)) this.writer.send(f);
  }

  /**
   * Request trailers over the header list size (h2/header-list-size.ts): too
   * late for a 431, so the stream is reset as nghttp2 resets one whose header list
   * it will not take (ENHANCE_YOUR_CALM), and the upstream is told to drop it:
   * after the block where it has it, in its place in translate mode.
   */
  refuseTrailers(id: number, stream: RelayStream): void {
    this.ctx.log.debug('request trailers over the header list size; stream reset', { peer: this.conn.peer, streamId: id });
    this.toUpstream.send(rstStreamFrame(id, Http2Error.CANCEL));
    if (stream.via && !stream.via.closed) stream.via.close(Http2Error.CANCEL);
    this.writer.send(rstStreamFrame(id, Http2Error.ENHANCE_YOUR_CALM));
    this.calls.end(id, stream, { side: 'proxy', code: Http2Error.ENHANCE_YOUR_CALM });
  }

  /**
   * --enforce-deadlines: the call's deadline passed. The upstream is told to stop
   * (RST_STREAM CANCEL); a caller still waiting for its answer gets
   * DEADLINE_EXCEEDED (trailers-only for gRPC), one whose response is under way
   * gets RST_STREAM CANCEL. Whatever the upstream still sends for the stream
   * passes on, and the client discards it: dropping it would leak connection
   * window and, for a header block, break HPACK decoding.
   */
  deadline(id: number, stream: RelayStream): void {
    this.toUpstream.send(rstStreamFrame(id, Http2Error.CANCEL));
    stream.detour?.drop();
    if (stream.responded) {
      this.writer.send(rstStreamFrame(id, Http2Error.CANCEL));
      return this.calls.end(id, stream, { side: 'proxy', code: Http2Error.CANCEL });
    }
    const { fields, body } = replyFrames(stream, GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    // The answer's frames in one write.
    this.writer.cork();
    this.writer.send(() => headersFrame(id, this.writer.block(fields), !body));
    if (body) {
      stream.call.tap.responseData(body);
      this.writer.send(dataFrame(id, body, true));
    }
    this.writer.uncork();
    this.calls.end(id, stream);
  }

  /**
   * The upstream cannot be reached: the client still gets HTTP/2 answers, never
   * a silent close — the relay's own SETTINGS, its `unacknowledged` SETTINGS
   * acknowledged, and UNAVAILABLE for each call it sent.
   */
  unreachableAll(unacknowledged: number, reason: string): void {
    this.unreachableReason = reason;
    this.writer.cork();
    this.writer.write(EMPTY_SETTINGS);
    for (let n = unacknowledged; n > 0; n--) this.writer.write(SETTINGS_ACK);
    for (const [id, stream] of this.calls.streams) this.unreachable(id, stream);
    this.writer.uncork();
  }

  /** A call on a connection whose upstream cannot be reached: UNAVAILABLE at once (no upstream ever spoke on it), and over. */
  unreachable(id: number, stream: RelayStream): void {
    stream.call.record.upstreamUnreachable = true;
    const { fields, body } = replyFrames(stream, GrpcCode.UNAVAILABLE, this.unreachableReason);
    this.writer.write(headersFrame(id, this.writer.localBlock(fields), !body));
    if (body) {
      stream.call.tap.responseData(body);
      this.writer.write(dataFrame(id, body, true));
    }
    this.calls.answered(id, stream);
  }

  /** Ends every call the upstream's connection had (none sent elsewhere), as `lost` says. */
  lostAll(lost: Reset): void {
    for (const [id, stream] of this.calls.streams) if (!stream.via) this.lost(id, stream, lost);
  }

  /** The held last DATA the client's windows never took: each call gets the reset its ending could not be. */
  resetHeld(lost: Reset): void {
    for (const { id, stream } of this.writer.dropHeld()) {
      this.writer.write(rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
      this.calls.end(id, stream, lost);
    }
  }

  /**
   * Ends one call whose upstream's connection broke between frames (the app
   * killed, say), in its own protocol's words, never as the client's cancel, as
   * the terminating path ends them (proxy/forward-h2.ts) —
   *
   *   the call's state                      the client reads
   *   no response yet                       the relay's UNAVAILABLE answer (local-reply.ts)
   *   gRPC, response under way              trailers grpc-status 14 (HEADERS, END_STREAM)
   *   gRPC-Web, Connect streaming           their status frame in a last DATA (END_STREAM)
   *   REST, or a body cut inside a message  RST_STREAM(INTERNAL_ERROR)
   *   response whole, request still open   RST_STREAM(NO_ERROR) (RFC 9113 §8.1)
   *
   * A last DATA is held for the client's windows (ClientWriter), and its call
   * ends once it went. The caller writes where a frame may be added.
   */
  lost(id: number, stream: RelayStream, lost: Reset): void {
    const { record, tap } = stream.call;
    if (stream.responseEnded) {
      this.writer.write(rstStreamFrame(id, Http2Error.NO_ERROR));
      return this.calls.end(id, stream);
    }
    if (!stream.responded) {
      // Connected, then lost without an answer: perhaps no longer the server it was.
      this.ctx.protocols.forget(this.target);
      const { fields, body } = replyFrames(stream, GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
      this.writer.write(headersFrame(id, this.writer.block(fields), !body));
      if (body) this.writer.hold(id, stream, body);
      else this.calls.end(id, stream, lost);
      return;
    }
    record.upstreamEndTime = now();
    const ending = tap.responseAtBoundary() ? upstreamLostEnding(record.protocol, record.framed, stream.base64, true) : undefined;
    if (ending?.trailers) {
      tap.responseTrailers(ending.trailers);
      this.writer.write(headersFrame(id, this.writer.block(Object.entries(ending.trailers)), true));
      this.calls.end(id, stream, lost);
    } else if (ending?.body) this.writer.hold(id, stream, ending.body);
    else {
      this.writer.write(rstStreamFrame(id, Http2Error.INTERNAL_ERROR));
      this.calls.end(id, stream, lost);
    }
  }
}
