// An HTTP/1.1 call to an upstream that speaks only HTTP/2, carried as an HTTP/2
// stream on the pooled session: the request line and Host become pseudo-headers,
// the body streams with backpressure, and the response comes back as an HTTP/1.1
// response — chunked when the upstream gave no length, with its HTTP/2 trailers
// as the trailer section. A reset from the upstream closes the caller's
// connection mid-response, the one way HTTP/1.1 has to say a body is cut short.
import type http from 'node:http';
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { PooledSession } from '../upstream/h2-session-pool.ts';
import { fieldsFromRaw, filterH2Headers, filterRawHeaders } from '../protocol/hop-by-hop.ts';
import type { Inbound } from '../call/inbound.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import { NodeErrorCode } from '../core/errors.ts';
import { abandonH1, CallGuard } from './call-guard.ts';

/**
 * HTTP/1.1 raw request headers as HTTP/2 fields: Host becomes :authority, names
 * lower-case (RFC 9113 §8.2.1), connection-specific fields gone (§8.2.2), and a
 * repeated field kept as repeated fields (cookies may be either, §8.2.3).
 */
function h2RequestHeaders(raw: readonly string[], method: string, path: string, target: UpstreamUrl, traceparent: string | undefined): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = { ':method': method, ':path': path, ':scheme': target.tls ? 'https' : 'http', ':authority': target.authority };
  const kept = filterRawHeaders(raw);
  for (let i = 0; i < kept.length; i += 2) {
    const name = kept[i]!.toLowerCase();
    const value = kept[i + 1]!;
    if (name === 'host') {
      out[':authority'] = value;
      continue;
    }
    const seen = out[name];
    if (seen === undefined) out[name] = value;
    else if (Array.isArray(seen)) seen.push(value);
    else out[name] = [String(seen), value];
  }
  if (traceparent) out.traceparent = traceparent;
  return out;
}

/** Whether an HTTP/1.1 request carries a body (RFC 9112 §6.3): a length above 0, or chunked. */
function hasBody(req: http.IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function forwardH1ToH2(ctx: ProxyContext, inbound: Inbound, req: http.IncomingMessage, res: http.ServerResponse, closing: () => boolean, target: UpstreamUrl): void {
  const { call, detected, method, path, contentType } = inbound;
  const { record, tap } = call;
  res.sendDate = false;
  /** Who closed the caller's connection mid-response, when it was not the caller. */
  let closedBy: 'upstream' | 'proxy' | undefined;
  let resetCode: number = CONNECTION_CLOSED;
  let up: http2.ClientHttp2Stream | undefined;

  // Every event callback of this call runs through the guard: a throw ends this call only.
  const guard = new CallGuard(ctx.faults, 'forward_h1', () => {
    if (up && !up.closed && !up.destroyed) up.close(Http2Error.CANCEL);
    // Cut mid-response by the proxy; else answered 500, which the call records.
    if (res.headersSent) closedBy ??= 'proxy';
    else tap.responseHeaders(500, {});
    // Closed already (the fault was in its own 'close'): the call ends here, else at that 'close'.
    if (res.destroyed) call.end({ side: 'proxy', code: resetCode });
    abandonH1(res);
  });

  const reply = (code: LocalCode, message: string): void => {
    if (res.headersSent) return;
    const r = localReply(detected.protocol, detected.framed, contentType, code, message);
    tap.responseHeaders(r.status, r.headers);
    if (r.body) tap.responseData(r.body);
    res.writeHead(r.status, { ...r.headers, 'content-length': r.body ? r.body.length : 0 });
    res.end(r.body);
    req.resume();
  };

  res.on('close', guard.wrap(() => {
    if (res.writableFinished) return call.end(closedBy && { side: closedBy, code: resetCode });
    if (up && !up.closed && !up.destroyed) up.close(Http2Error.CANCEL);
    call.end({ side: closedBy ?? 'client', code: resetCode });
  }));

  const endStream = !hasBody(req);
  let pooled: PooledSession;
  try {
    pooled = ctx.h2.get(target);
    up = pooled.session.request(h2RequestHeaders(req.rawHeaders, method, path, target, call.traceparent), { endStream });
  } catch (err) {
    // A session that failed at once, or a request head HTTP/2 refuses (a repeated single-value field).
    const code = (err as { code?: string }).code ?? (err as Error).message;
    const refused = code.startsWith('ERR_HTTP2_HEADER') || code.startsWith('ERR_HTTP2_INVALID');
    if (!refused) record.upstreamUnreachable = true;
    return reply(refused ? GrpcCode.INTERNAL : GrpcCode.UNAVAILABLE, `${refused ? 'request cannot be sent over HTTP/2' : 'upstream unavailable'}: ${code}`);
  }
  const upstream = up;
  call.sent(pooled.conn.peer);
  pooled.conn.calls++;
  pooled.conn.active++;

  call.enforceDeadline(guard.wrap(() => {
    upstream.close(Http2Error.CANCEL);
    if (!res.headersSent) return reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    closedBy = 'proxy';
    res.destroy();
  }));

  if (endStream) req.resume();
  else {
    req.on('data', guard.wrap((chunk: Buffer) => tap.requestData(chunk)));
    req.pipe(upstream);
  }

  let upstreamError: (Error & { code?: string }) | undefined;
  let ended = false;
  let trailers: http2.IncomingHttpHeaders | undefined;
  let responseLength: string | undefined;
  upstream.on('error', (err) => (upstreamError = err));
  // Node hands each header block's raw fields over as a third argument, which its type definitions leave out.
  upstream.on('response', guard.wrap((h: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader, _flags: number, raw?: string[]) => {
    record.upstreamHeadersTime = now();
    if (pooled.connectedAt !== undefined && pooled.connectedAt > record.upstreamStartTime!) record.upstreamStartTime = pooled.connectedAt;
    const status = Number(h[':status']);
    tap.responseHeaders(status, h);
    responseLength = h['content-length'];
    if (res.destroyed) return;
    const out: Record<string, string | string[]> = {};
    if (raw) fieldsFromRaw(raw, out, true);
    else filterH2Headers(h, out);
    // Draining, or past --max-connection-age: node:http closes the connection after this answer.
    if (closing()) out.connection = 'close';
    res.writeHead(status, out);
    res.flushHeaders();
  }));
  upstream.on('data', guard.wrap((chunk: Buffer) => tap.responseData(chunk)));
  upstream.pipe(res, { end: false });
  let trailersRaw: string[] | undefined;
  upstream.on('trailers', guard.wrap((t: http2.IncomingHttpHeaders, _flags: number, raw?: string[]) => {
    trailers = t;
    trailersRaw = raw;
    tap.responseTrailers(t);
  }));
  upstream.on('end', () => (ended = true));

  upstream.on('close', guard.wrap(() => {
    pooled.conn.active--;
    if (res.destroyed || res.writableEnded || record.deadlineEnforced) return;
    const code = upstream.rstCode ?? Http2Error.INTERNAL_ERROR;
    if (code === Http2Error.NO_ERROR && ended && res.headersSent) {
      record.upstreamEndTime = now();
      if (trailers) {
        const out: Record<string, string | string[]> = {};
        if (trailersRaw) fieldsFromRaw(trailersRaw, out, true);
        else filterH2Headers(trailers, out);
        // As pairs: given an object, addTrailers would write an array as one joined line.
        res.addTrailers(Object.entries(out).flatMap(([k, v]) => (Array.isArray(v) ? v.map((x): [string, string] => [k, x]) : [[k, v] as [string, string]])));
      }
      res.end();
      return;
    }
    if (!res.headersSent) {
      if (!pooled.connected) {
        record.upstreamUnreachable = true;
        return reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${upstreamError?.code ?? upstreamError?.message ?? 'connection failed'}`);
      }
      // The session came up but the stream failed before any answer: perhaps no longer the server it was.
      ctx.protocols.forget(target);
      // Its connection broke (the app killed, a PING unanswered): 503, which a REST caller may retry.
      if (pooled.session.destroyed && upstreamError?.code !== NodeErrorCode.HTTP2_STREAM_ERROR && code !== Http2Error.REFUSED_STREAM && upstreamError?.code !== NodeErrorCode.HTTP2_GOAWAY_SESSION) {
        record.upstreamLost = true;
        return reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
      }
      const refused = code === Http2Error.REFUSED_STREAM || upstreamError?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION;
      record.reset = { side: 'upstream', code: refused ? Http2Error.REFUSED_STREAM : code };
      return reply(refused ? GrpcCode.UNAVAILABLE : GrpcCode.INTERNAL, `upstream reset the stream: ${upstreamError?.code ?? code}`);
    }
    closedBy = 'upstream';
    // The upstream's connection broke, rather than it resetting this stream.
    const lost = pooled.session.destroyed && upstreamError?.code !== NodeErrorCode.HTTP2_STREAM_ERROR;
    if (lost) record.upstreamLost = true;
    resetCode = lost ? CONNECTION_CLOSED : code;
    // gRPC-Web and Connect streams stopped between frames end with their own UNAVAILABLE frame.
    const ending = lost && tap.responseAtBoundary() && responseLength === undefined ? upstreamLostEnding(detected.protocol, detected.framed, detected.base64, false) : undefined;
    if (ending?.body) {
      record.upstreamEndTime = now();
      tap.responseData(ending.body);
      res.end(ending.body);
      return;
    }
    // Cut short after the response began: HTTP/1.1 can only close the connection.
    res.destroy();
  }));
}
