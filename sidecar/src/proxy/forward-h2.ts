// An HTTP/2 call forwarded over an HTTP/2 session to the upstream, frame for
// frame: headers, data with backpressure both ways, trailers (and trailers-only
// responses), and resets with their codes in both directions.
//
// One H2Forward per call holds its state explicitly: where the response to the
// caller stands (`response`), whether the upstream's response is complete, the
// attempt at the upstream in progress (and whether it is the one retry), and why
// the proxy closed the caller's stream. Each event of either stream is a method.
import type http2 from 'node:http2';
import { CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { Flag } from '../h2/frame-types.ts';
import { now } from '../clock.ts';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { Inbound } from '../call/inbound.ts';
import { fieldsFromRaw, filterH2Headers } from '../protocol/hop-by-hop.ts';
import { replyOnH2, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import type { PooledSession } from '../upstream/h2-session-pool.ts';
import { ReplayableBody } from './replayable-body.ts';
import { refusal } from '../upstream/upstream-retries.ts';
import { NodeErrorCode } from '../core/errors.ts';
import { abandonH2, CallGuard } from './call-guard.ts';

/** Node's error for a stream the peer reset with a code other than NO_ERROR or CANCEL. */
/** Node's error for a stream still waiting for its session when the upstream's GOAWAY closed it: never sent. */

// Node's respond() also takes `sendDate`, which its type definitions leave out.
// Off: the caller sees the upstream's headers, not a date header of our own.
type RespondOptions = http2.ServerStreamResponseOptions & { sendDate: false };
const TRAILERS_ONLY: RespondOptions = { endStream: true, sendDate: false };
const WITH_TRAILERS: RespondOptions = { waitForTrailers: true, sendDate: false };

const ignore = (): void => {};

/**
 * Where the response to the caller stands: nothing sent yet; headers sent and
 * the body (then trailers) on the way; or ended (trailers sent, a trailers-only
 * response, or a local reply).
 */
type ResponseState = 'pending' | 'streaming' | 'ended';

/** One try at the upstream: the first, or the one retry of an attempt it refused unprocessed. */
interface Attempt {
  readonly session: PooledSession;
  readonly upstream: http2.ClientHttp2Stream;
  /** The upstream stream's error, if it had one: read when it closes. */
  error: (Error & { code?: string }) | undefined;
}

class H2Forward {
  private readonly requestHeaders: http2.OutgoingHttpHeaders = {};
  private readonly endStream: boolean;
  private response: ResponseState = 'pending';
  /** The upstream's response ended (trailers, an end frame in the body, or END_STREAM with NO_ERROR). */
  private upstreamComplete = false;
  /** The current attempt's readable side ended (not yet proof of a whole response). */
  private endSeen = false;
  /** The attempt in progress (undefined before the first, or when none could start). */
  private current: Attempt | undefined;
  private retried = false;
  /** The request body, kept until the response begins so that a refused attempt can be sent again. */
  private body: ReplayableBody | undefined;
  private trailers: http2.IncomingHttpHeaders | undefined;
  private trailersRaw: string[] | undefined;
  /** Trailers of the proxy's own, when the upstream's connection broke mid-response. */
  private lostTrailers: Record<string, string> | undefined;
  /** Why the proxy closed the downstream stream, when it did. */
  private closedBy: CallReset | undefined;
  /** Every event callback of this call runs through it: a throw ends this call only. */
  readonly guard: CallGuard;

  constructor(
    private readonly ctx: ProxyContext,
    private readonly inbound: Inbound,
    private readonly stream: http2.ServerHttp2Stream,
    private readonly clientReset: () => number,
    private readonly onClientReset: () => void,
  ) {
    this.endStream = stream.endAfterHeaders;
    this.guard = new CallGuard(ctx.faults, 'forward_h2', () => this.abandon());
  }

  /** A fault of the sidecar's own in this call: the upstream cancelled, the caller's stream reset INTERNAL_ERROR. */
  private abandon(): void {
    const up = this.current?.upstream;
    if (up && !up.closed && !up.destroyed) up.close(Http2Error.CANCEL);
    this.closedBy ??= { side: 'proxy', code: Http2Error.INTERNAL_ERROR };
    this.response = 'ended';
    // Closed already (the fault was in its own 'close'): the call ends here, else at that 'close'.
    if (this.stream.destroyed) this.inbound.call.end(this.closedBy);
    abandonH2(this.stream);
  }

  /** Local answer to the caller (UNAVAILABLE, DEADLINE_EXCEEDED, ...), unless a response has begun. */
  reply(code: LocalCode, message: string): void {
    if (this.response !== 'pending' || this.stream.destroyed) return;
    this.response = 'ended';
    const { detected, contentType } = this.inbound;
    replyOnH2(this.stream, this.inbound.call.tap, detected, contentType, code, message);
  }

  /** The caller's stream closed: the call ends, with the reset that ended it if any. */
  downstreamClosed(): void {
    const call = this.inbound.call;
    // closedBy: a response the proxy ended itself still tells whose fault it was.
    if (this.response === 'ended') return call.end(this.closedBy);
    if (this.closedBy) return call.end(this.closedBy);
    // The client reset the stream (or its connection died) before the response ended.
    const code = this.clientReset();
    const up = this.current?.upstream;
    if (up && !up.closed && !up.destroyed) up.close(code === CONNECTION_CLOSED || code === Http2Error.NO_ERROR ? Http2Error.CANCEL : code);
    call.end({ side: 'client', code });
    if (code !== CONNECTION_CLOSED) this.onClientReset();
  }

  /** Sends the call to `target`: request headers built once, the deadline armed, the first attempt. */
  forward(target: UpstreamUrl, headers: http2.IncomingHttpHeaders): void {
    const { inbound, requestHeaders } = this;
    const call = inbound.call;
    requestHeaders[':method'] = inbound.method;
    requestHeaders[':path'] = inbound.path;
    requestHeaders[':scheme'] = target.tls ? 'https' : 'http';
    requestHeaders[':authority'] = headers[':authority'] ?? target.authority;
    // Repeated fields stay repeated: Node's header object has them joined with ", ".
    if (inbound.rawHeaders) fieldsFromRaw(inbound.rawHeaders, requestHeaders as Record<string, string | string[]>, true);
    else filterH2Headers(headers, requestHeaders as Record<string, string | string[]>);
    if (call.traceparent) requestHeaders.traceparent = call.traceparent;

    call.enforceDeadline(this.guard.wrap(() => this.deadlineExpired()));
    this.stream.on('wantTrailers', this.guard.wrap(() => this.sendTrailers()));
    this.attempt(target);
  }

  private deadlineExpired(): void {
    this.current?.upstream.close(Http2Error.CANCEL);
    if (this.response === 'pending') return this.reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    this.closedBy = { side: 'proxy', code: Http2Error.CANCEL };
    this.stream.close(Http2Error.CANCEL);
  }

  private completeResponse(): void {
    if (this.upstreamComplete) return;
    this.upstreamComplete = true;
    this.inbound.call.record.upstreamEndTime = now();
    if (this.response === 'streaming' && !this.stream.destroyed) this.stream.end();
  }

  private sendTrailers(): void {
    const out: http2.OutgoingHttpHeaders = {};
    if (this.lostTrailers) {
      this.inbound.call.tap.responseTrailers(this.lostTrailers);
      Object.assign(out, this.lostTrailers);
    } else if (this.trailersRaw) fieldsFromRaw(this.trailersRaw, out as Record<string, string | string[]>, true);
    else if (this.trailers) filterH2Headers(this.trailers, out as Record<string, string | string[]>);
    this.response = 'ended';
    this.stream.sendTrailers(out);
  }

  /** One attempt at the upstream: the first, or the one retry of an attempt it refused unprocessed. */
  private attempt(target: UpstreamUrl): void {
    const { call } = this.inbound;
    const { record, tap } = call;
    let session: PooledSession;
    let upstream: http2.ClientHttp2Stream;
    try {
      session = this.ctx.h2.get(target);
      upstream = session.session.request(this.requestHeaders, { endStream: this.endStream });
    } catch (err) {
      record.upstreamUnreachable = true;
      this.reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${(err as Error).message}`);
      return;
    }
    const attempt: Attempt = { session, upstream, error: undefined };
    this.current = attempt;
    if (this.retried) record.upstream = session.conn.peer;
    else call.sent(session.conn.peer);
    session.conn.calls++;
    session.conn.active++;

    if (!this.endStream) {
      if (this.body) this.body.resendTo(upstream);
      else this.body = new ReplayableBody(this.stream, upstream, (chunk) => tap.requestData(chunk));
    }

    const { guard } = this;
    upstream.on('error', (err) => {
      attempt.error = err;
    });
    // Node hands each header block's raw fields over as a third argument, which its type definitions leave out.
    upstream.on('response', guard.wrap((h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, flags: number, raw?: string[]) => this.upstreamResponse(session, h, flags, raw)));
    upstream.on('data', guard.wrap((chunk: Buffer) => tap.responseData(chunk)));
    upstream.pipe(this.stream, { end: false });
    upstream.on('trailers', guard.wrap((t: http2.IncomingHttpHeaders, _flags: number, raw?: string[]) => {
      this.trailers = t;
      this.trailersRaw = raw;
      tap.responseTrailers(t);
    }));
    upstream.on('end', guard.wrap(() => {
      this.endSeen = true;
      // Node also ends the readable side when a RST_STREAM arrives, before its code
      // is known, and ending the caller's stream then would make a truncated body look
      // whole. So the response completes here only when it proves its own end —
      // trailers, or the status frame gRPC-Web and Connect put in the body; otherwise
      // at 'close', where the reset code (or its absence) is known.
      if (this.trailers || tap.sawEndFrame()) this.completeResponse();
    }));
    upstream.on('close', guard.wrap(() => this.upstreamClosed(target, attempt)));
  }

  private upstreamResponse(session: PooledSession, h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, flags: number, raw: string[] | undefined): void {
    const { record, tap } = this.inbound.call;
    this.body?.release();
    record.upstreamHeadersTime = now();
    // A call that waited for its session to connect reached the upstream only then.
    if (session.connectedAt !== undefined && session.connectedAt > record.upstreamStartTime!) record.upstreamStartTime = session.connectedAt;
    const status = Number(h[':status']);
    tap.responseHeaders(status, h);
    if (this.stream.destroyed) return;
    const out: http2.OutgoingHttpHeaders = { ':status': status };
    if (raw) fieldsFromRaw(raw, out as Record<string, string | string[]>, true);
    else filterH2Headers(h, out as Record<string, string | string[]>);
    const trailersOnly = (flags & Flag.END_STREAM) !== 0;
    if (trailersOnly) this.response = 'ended';
    else if (this.response === 'pending') this.response = 'streaming';
    this.stream.respond(out, trailersOnly ? TRAILERS_ONLY : WITH_TRAILERS);
  }

  private upstreamClosed(target: UpstreamUrl, attempt: Attempt): void {
    const { ctx, stream } = this;
    const { session, upstream, error } = attempt;
    const record = this.inbound.call.record;
    session.conn.active--;
    // Already answered or reset for the caller: by the deadline, or by the caller itself.
    if (stream.destroyed || stream.closed || record.deadlineEnforced) return;
    const code = upstream.rstCode ?? Http2Error.INTERNAL_ERROR;
    const responded = this.response !== 'pending';
    // Refused before the upstream processed it, with the whole body still at hand: sent once more.
    const refused = !responded && !this.retried && session.connected && (this.body?.replayable ?? true) ? refusal(session, upstream, code, error) : undefined;
    if (refused) {
      this.retried = true;
      ctx.retries.retried(refused);
      ctx.log.debug('the upstream refused a call unprocessed; sending it again', { upstream: session.conn.peer, reason: refused, streamId: upstream.id, goawayLastStreamId: session.goawayLastStreamId });
      return this.attempt(target);
    }
    // The upstream's connection broke (the app killed, say) rather than it resetting
    // this stream: Node then gives the stream a code (CANCEL, NO_ERROR) the upstream
    // never sent, which the caller would read as its own cancellation or a whole body.
    const lost = !this.upstreamComplete && session.connected && session.session.destroyed && error?.code !== NodeErrorCode.HTTP2_STREAM_ERROR && code !== Http2Error.REFUSED_STREAM;
    if (lost) return this.endUpstreamLost(target);
    if (code === Http2Error.NO_ERROR && this.endSeen) this.completeResponse();
    if (this.upstreamComplete && responded) {
      // The response is whole; a reset now only stops the request side (RFC 9113 §8.1).
      if (stream.readableEnded) return;
      const stopRequest = (): void => void setImmediate(() => stream.close(code));
      if (this.response === 'ended') stopRequest();
      else stream.once('wantTrailers', stopRequest);
      return;
    }
    if (!responded) {
      if (!session.connected) {
        record.upstreamUnreachable = true;
        return this.reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${error?.code ?? error?.message ?? 'connection failed'}`);
      }
      // Connected, then failed without an answer: perhaps no longer the server it was.
      ctx.protocols.forget(target);
      if (error?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION) {
        // The upstream went away before taking this stream: safe for the client to retry.
        this.closedBy = { side: 'upstream', code: Http2Error.REFUSED_STREAM };
        return stream.close(Http2Error.REFUSED_STREAM);
      }
    }
    this.closedBy = { side: 'upstream', code };
    stream.close(code);
  }

  /**
   * A response not begun is answered UNAVAILABLE; one begun ends with the
   * protocol's own UNAVAILABLE ending where the body stopped between frames, else
   * RST_STREAM(INTERNAL_ERROR). Counted as the upstream's connection closed.
   */
  private endUpstreamLost(target: UpstreamUrl): void {
    const { stream } = this;
    const { detected, call } = this.inbound;
    this.closedBy = { side: 'upstream', code: CONNECTION_CLOSED };
    call.record.upstreamLost = true;
    if (this.response === 'pending') {
      this.ctx.protocols.forget(target);
      return this.reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
    }
    call.record.upstreamEndTime = now();
    const ending = call.tap.responseAtBoundary() ? upstreamLostEnding(detected.protocol, detected.framed, detected.base64, true) : undefined;
    if (!ending) return stream.close(Http2Error.INTERNAL_ERROR);
    if (ending.body) {
      call.tap.responseData(ending.body);
      stream.write(ending.body);
    }
    this.lostTrailers = ending.trailers ?? {};
    stream.end();
  }
}

/**
 * `clientReset` gives the code of the caller's early end (see client-reset.ts);
 * `onClientReset` hears of each call its client reset before the response ended:
 * the listener's budget against rapid-reset floods.
 */
export function forwardH2(ctx: ProxyContext, inbound: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, clientReset: () => number, onClientReset: () => void = ignore): void {
  const handler = new H2Forward(ctx, inbound, stream, clientReset, onClientReset);
  stream.on('close', handler.guard.wrap(() => handler.downstreamClosed()));
  const target = inbound.call.target;
  if (!target) {
    inbound.call.record.upstreamUnreachable = true;
    return handler.reply(GrpcCode.UNAVAILABLE, 'no upstream endpoint known');
  }
  handler.forward(target, headers);
}
