// An HTTP/2 call forwarded over an HTTP/2 session to the upstream, frame for
// frame: headers, data with backpressure both ways, trailers (and trailers-only
// responses), and resets with their codes in both directions.
import http2 from 'node:http2';
import { CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from './context.ts';
import type { Inbound } from './inbound.ts';
import { fieldsFromRaw, filterH2Headers } from './hop-by-hop.ts';
import { replyOnH2, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from './local-reply.ts';
import type { PooledSession } from './h2-session-pool.ts';
import { ReplayableBody } from './replayable-body.ts';
import type { RetryReason } from './upstream-retries.ts';

const END_STREAM = http2.constants.NGHTTP2_FLAG_END_STREAM;
/** Node's error for a stream the peer reset with a code other than NO_ERROR or CANCEL. */
const PEER_RESET = 'ERR_HTTP2_STREAM_ERROR';
/** Node's error for a stream still waiting for its session when the upstream's GOAWAY closed it: never sent. */
const GOAWAY_SESSION = 'ERR_HTTP2_GOAWAY_SESSION';

// Node's respond() also takes `sendDate`, which its type definitions leave out.
// Off: the caller sees the upstream's headers, not a date header of our own.
type RespondOptions = http2.ServerStreamResponseOptions & { sendDate: false };
const TRAILERS_ONLY: RespondOptions = { endStream: true, sendDate: false };
const WITH_TRAILERS: RespondOptions = { waitForTrailers: true, sendDate: false };

const ignore = (): void => {};

/**
 * Why the upstream never processed an attempt that closed unanswered, if it
 * did not: a stream above the last stream id of its GOAWAY (nghttp2 closes those
 * with REFUSED_STREAM) or never sent before the GOAWAY; or a REFUSED_STREAM of
 * its own. Any other ending may have reached the app, and is not sent again.
 */
function refusal(session: PooledSession, upstream: http2.ClientHttp2Stream, code: number, err: (Error & { code?: string }) | undefined): RetryReason | undefined {
  if (err?.code === GOAWAY_SESSION) return 'goaway';
  if (code !== Http2Error.REFUSED_STREAM) return undefined;
  const last = session.goawayLastStreamId;
  return last !== undefined && upstream.id !== undefined && upstream.id > last ? 'goaway' : 'refused_stream';
}

/**
 * `clientReset` gives the code of the caller's early end (see client-reset.ts);
 * `onClientReset` hears of each call its client reset before the response ended:
 * the listener's budget against rapid-reset floods.
 */
export function forwardH2(ctx: ProxyContext, inbound: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, clientReset: () => number, onClientReset: () => void = ignore): void {
  const { call, detected, method, path, contentType } = inbound;
  const { record, tap, target } = call;

  let up: http2.ClientHttp2Stream | undefined;
  let responded = false;
  let responseDone = false;
  let upstreamComplete = false;
  let trailers: http2.IncomingHttpHeaders | undefined;
  /** Why the proxy closed the downstream stream, when it did. */
  let closedBy: CallReset | undefined;

  const reply = (code: LocalCode, message: string): void => {
    if (responded || stream.destroyed) return;
    responded = true;
    responseDone = true;
    replyOnH2(stream, tap, detected, contentType, code, message);
  };

  stream.on('close', () => {
    // closedBy: a response the proxy ended itself still tells whose fault it was.
    if (responseDone) return call.end(closedBy);
    if (closedBy) return call.end(closedBy);
    // The client reset the stream (or its connection died) before the response ended.
    const code = clientReset();
    if (up && !up.closed && !up.destroyed) up.close(code === CONNECTION_CLOSED || code === Http2Error.NO_ERROR ? Http2Error.CANCEL : code);
    call.end({ side: 'client', code });
    if (code !== CONNECTION_CLOSED) onClientReset();
  });

  if (!target) {
    record.upstreamUnreachable = true;
    return reply(GrpcCode.UNAVAILABLE, 'no upstream endpoint known');
  }
  const requestHeaders: http2.OutgoingHttpHeaders = {
    ':method': method,
    ':path': path,
    ':scheme': target.tls ? 'https' : 'http',
    ':authority': headers[':authority'] ?? target.authority,
  };
  // Repeated fields stay repeated: Node's header object has them joined with ", ".
  if (inbound.rawHeaders) fieldsFromRaw(inbound.rawHeaders, requestHeaders as Record<string, string | string[]>, true);
  else filterH2Headers(headers, requestHeaders as Record<string, string | string[]>);
  if (call.traceparent) requestHeaders.traceparent = call.traceparent;
  const endStream = stream.endAfterHeaders;
  let body: ReplayableBody | undefined;
  let retried = false;
  let endSeen = false;
  let trailersRaw: string[] | undefined;
  /** Trailers of the proxy's own, when the upstream's connection broke mid-response. */
  let lostTrailers: Record<string, string> | undefined;

  call.enforceDeadline(() => {
    up?.close(Http2Error.CANCEL);
    if (!responded) return reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    closedBy = { side: 'proxy', code: Http2Error.CANCEL };
    stream.close(Http2Error.CANCEL);
  });

  const completeResponse = (): void => {
    if (upstreamComplete) return;
    upstreamComplete = true;
    record.upstreamEndTime = now();
    if (responded && !responseDone && !stream.destroyed) stream.end();
  };
  stream.on('wantTrailers', () => {
    const out: http2.OutgoingHttpHeaders = {};
    if (lostTrailers) {
      tap.responseTrailers(lostTrailers);
      Object.assign(out, lostTrailers);
    } else if (trailersRaw) fieldsFromRaw(trailersRaw, out as Record<string, string | string[]>, true);
    else if (trailers) filterH2Headers(trailers, out as Record<string, string | string[]>);
    responseDone = true;
    stream.sendTrailers(out);
  });

  /** One attempt at the upstream: the first, or the one retry of an attempt it refused unprocessed. */
  const attempt = (): void => {
    let session: PooledSession;
    let upstream: http2.ClientHttp2Stream;
    try {
      session = ctx.h2.get(target);
      upstream = session.session.request(requestHeaders, { endStream });
    } catch (err) {
      record.upstreamUnreachable = true;
      reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${(err as Error).message}`);
      return;
    }
    up = upstream;
    if (retried) record.upstream = session.conn.peer;
    else call.sent(session.conn.peer);
    session.conn.calls++;
    session.conn.active++;

    if (!endStream) {
      if (body) body.resendTo(upstream);
      else body = new ReplayableBody(stream, upstream, (chunk) => tap.requestData(chunk));
    }

    let upstreamError: (Error & { code?: string }) | undefined;
    upstream.on('error', (err) => {
      upstreamError = err;
    });
    // Node hands each header block's raw fields over as a third argument, which its type definitions leave out.
    upstream.on('response', (h, flags, raw?: string[]) => {
      body?.release();
      record.upstreamHeadersTime = now();
      // A call that waited for its session to connect reached the upstream only then.
      if (session.connectedAt !== undefined && session.connectedAt > record.upstreamStartTime!) record.upstreamStartTime = session.connectedAt;
      const status = Number(h[':status']);
      tap.responseHeaders(status, h);
      if (stream.destroyed) return;
      const out: http2.OutgoingHttpHeaders = { ':status': status };
      if (raw) fieldsFromRaw(raw, out as Record<string, string | string[]>, true);
      else filterH2Headers(h, out as Record<string, string | string[]>);
      const trailersOnly = (flags & END_STREAM) !== 0;
      responded = true;
      if (trailersOnly) responseDone = true;
      stream.respond(out, trailersOnly ? TRAILERS_ONLY : WITH_TRAILERS);
    });
    upstream.on('data', (chunk: Buffer) => tap.responseData(chunk));
    upstream.pipe(stream, { end: false });
    upstream.on('trailers', (t, _flags, raw?: string[]) => {
      trailers = t;
      trailersRaw = raw;
      tap.responseTrailers(t);
    });
    upstream.on('end', () => {
      endSeen = true;
      // Node also ends the readable side when a RST_STREAM arrives, before its code
      // is known, and ending the caller's stream then would make a truncated body look
      // whole. So the response completes here only when it proves its own end —
      // trailers, or the status frame gRPC-Web and Connect put in the body; otherwise
      // at 'close', where the reset code (or its absence) is known.
      if (trailers || tap.sawEndFrame()) completeResponse();
    });

    upstream.on('close', () => {
      session.conn.active--;
      // Already answered or reset for the caller: by the deadline, or by the caller itself.
      if (stream.destroyed || stream.closed || record.deadlineEnforced) return;
      const code = upstream.rstCode ?? Http2Error.INTERNAL_ERROR;
      // Refused before the upstream processed it, with the whole body still at hand: sent once more.
      const refused = !responded && !retried && session.connected && (body?.replayable ?? true) ? refusal(session, upstream, code, upstreamError) : undefined;
      if (refused) {
        retried = true;
        ctx.retries.retried(refused);
        ctx.log.debug('the upstream refused a call unprocessed; sending it again', { upstream: session.conn.peer, reason: refused, streamId: upstream.id, goawayLastStreamId: session.goawayLastStreamId });
        return attempt();
      }
      // The upstream's connection broke (the app killed, say) rather than it resetting
      // this stream: Node then gives the stream a code (CANCEL, NO_ERROR) the upstream
      // never sent, which the caller would read as its own cancellation or a whole body.
      const lost = !upstreamComplete && session.connected && session.session.destroyed && upstreamError?.code !== PEER_RESET && code !== Http2Error.REFUSED_STREAM;
      if (lost) return endUpstreamLost();
      if (code === Http2Error.NO_ERROR && endSeen) completeResponse();
      if (upstreamComplete && responded) {
        // The response is whole; a reset now only stops the request side (RFC 9113 §8.1).
        if (stream.readableEnded) return;
        const stopRequest = (): void => void setImmediate(() => stream.close(code));
        if (responseDone) stopRequest();
        else stream.once('wantTrailers', stopRequest);
        return;
      }
      if (!responded) {
        if (!session.connected) {
          record.upstreamUnreachable = true;
          return reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${upstreamError?.code ?? upstreamError?.message ?? 'connection failed'}`);
        }
        // Connected, then failed without an answer: perhaps no longer the server it was.
        ctx.protocols.forget(target);
        if (upstreamError?.code === GOAWAY_SESSION) {
          // The upstream went away before taking this stream: safe for the client to retry.
          closedBy = { side: 'upstream', code: Http2Error.REFUSED_STREAM };
          return stream.close(Http2Error.REFUSED_STREAM);
        }
      }
      closedBy = { side: 'upstream', code };
      stream.close(code);
    });
  };
  attempt();

  /**
   * A response not begun is answered UNAVAILABLE; one begun ends with the
   * protocol's own UNAVAILABLE ending where the body stopped between frames, else
   * RST_STREAM(INTERNAL_ERROR). Counted as the upstream's connection closed.
   */
  const endUpstreamLost = (): void => {
    closedBy = { side: 'upstream', code: CONNECTION_CLOSED };
    if (!responded) {
      ctx.protocols.forget(target);
      return reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
    }
    record.upstreamEndTime = now();
    const ending = tap.responseAtBoundary() ? upstreamLostEnding(detected.protocol, detected.framed, detected.base64, true) : undefined;
    if (!ending) return stream.close(Http2Error.INTERNAL_ERROR);
    if (ending.body) {
      tap.responseData(ending.body);
      stream.write(ending.body);
    }
    lostTrailers = ending.trailers ?? {};
    stream.end();
  };
}
