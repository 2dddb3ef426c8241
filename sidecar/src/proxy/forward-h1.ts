// An HTTP/1.1 call forwarded over HTTP/1.1 to an upstream that speaks it (see
// forward-by-version.ts): bodies stream with backpressure, trailers of chunked
// responses pass through, and a connection closed mid-call on either side is
// closed on the other.
import http from 'node:http';
import { CONNECTION_CLOSED } from '../protocol/vocabulary.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { Inbound } from '../call/inbound.ts';
import type { H1Call } from '../upstream/h1-agent-pool.ts';
import { countUpstreamSocket, type UpstreamSocketState } from '../upstream/h1-upstream-socket.ts';
import { filterRawHeaders } from '../protocol/hop-by-hop.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import { ErrorCode } from '../core/errors.ts';
import { abandonH1, CallGuard } from './call-guard.ts';

/** Raw trailer pairs as `res.addTrailers` takes them. */
function trailerPairs(raw: string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2) out.push([raw[i]!, raw[i + 1]!]);
  return out;
}

/** The raw headers with the caller's traceparent replaced by the sidecar's span, when tracing. */
function withTraceparent(raw: string[], traceparent: string | undefined): string[] {
  if (!traceparent) return raw;
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() !== 'traceparent') out.push(raw[i]!, raw[i + 1]!);
  out.push('traceparent', traceparent);
  return out;
}

export function forwardH1(ctx: ProxyContext, inbound: Inbound, req: http.IncomingMessage, res: http.ServerResponse, closing: () => boolean): void {
  const { call, detected, method, path: url, contentType } = inbound;
  const { record, tap, target } = call;
  // No date header of our own: the caller sees the upstream's headers, no more.
  res.sendDate = false;

  /** Who closed the caller's connection mid-response, when it was not the caller. */
  let closedBy: 'upstream' | 'proxy' | undefined;
  const reply = (code: LocalCode, message: string): void => {
    const r = localReply(detected.protocol, detected.framed, contentType, code, message);
    tap.responseHeaders(r.status, r.headers);
    if (r.body) tap.responseData(r.body);
    res.writeHead(r.status, { ...r.headers, 'content-length': r.body ? r.body.length : 0 });
    res.end(r.body);
  };
  if (!target) {
    record.upstreamUnreachable = true;
    req.resume();
    res.on('close', () => call.end());
    return reply(GrpcCode.UNAVAILABLE, 'no upstream endpoint known');
  }

  let upstreamLength: string | undefined;
  /** The upstream call, waiting at its endpoint's gate or sent. */
  const sent: { req?: H1Call } = {};
  /** Whether the upstream request reached a connected socket, once it is sent. */
  let socketState: UpstreamSocketState = { opened: false };
  // Every event callback of this call runs through the guard: a throw ends this call only.
  const guard = new CallGuard(ctx.faults, 'forward_h1', () => {
    sent.req?.destroy();
    // Cut mid-response by the proxy; else answered 500, which the call records.
    if (res.headersSent) closedBy ??= 'proxy';
    else tap.responseHeaders(500, {});
    // Closed already (the fault was in its own 'close'): the call ends here, else at that 'close'.
    if (res.destroyed) call.end({ side: 'proxy', code: CONNECTION_CLOSED });
    abandonH1(res);
  });

  const headers = withTraceparent(filterRawHeaders(req.rawHeaders), call.traceparent);
  // Transfer-Encoding is hop-by-hop and was taken off, but a body without
  // Content-Length (the caller sent it chunked) must still be framed toward the app.
  // Node's client chunks a body unasked only for methods other than GET, HEAD,
  // DELETE, OPTIONS, TRACE and CONNECT; theirs it writes bare, and a keep-alive app
  // reads those bytes as the next request on the connection (request smuggling).
  // Naming the coding makes Node chunk the body whatever the method. Node's parser
  // has already refused Content-Length with Transfer-Encoding, and any coding list
  // that does not end in chunked; the caller's list goes on as it came, since Node
  // removed only the chunked framing and the body still carries any coding before it.
  const codings = req.headers['transfer-encoding'];
  if (codings !== undefined && req.headers['content-length'] === undefined) headers.push('Transfer-Encoding', codings);

  const onResponse = guard.wrap((upRes: http.IncomingMessage) => {
    record.upstreamHeadersTime = now();
    const status = upRes.statusCode ?? 502;
    tap.responseHeaders(status, upRes.headers);
    upstreamLength = upRes.headers['content-length'];
    const headers = filterRawHeaders(upRes.rawHeaders);
    // Draining, or past --max-connection-age: the client is asked to close the
    // connection, and node:http closes it after this answer (a `Connection: close` it writes).
    if (closing()) headers.push('connection', 'close');
    res.writeHead(status, upRes.statusMessage, headers);
    // Headers go out now, not with the first body byte: server-sent events and
    // long polls must see them at once.
    res.flushHeaders();
    upRes.on('data', guard.wrap((chunk: Buffer) => tap.responseData(chunk)));
    upRes.pipe(res, { end: false });
    upRes.on('end', guard.wrap(() => {
      record.upstreamEndTime = now();
      if (upRes.rawTrailers.length) {
        tap.responseTrailers(upRes.trailers);
        res.addTrailers(trailerPairs(filterRawHeaders(upRes.rawTrailers)));
      }
      res.end();
    }));
    upRes.on('aborted', guard.wrap(() => {
      // The upstream closed its connection mid-response: the caller must not take a
      // truncated body for a whole one.
      endUpstreamLost();
    }));
    upRes.on('error', () => {});
  });

  const onUpstreamError = guard.wrap((err: Error & { code?: string }) => {
    if (record.deadlineEnforced || guard.abandoned) return;
    if (res.headersSent) return endUpstreamLost();
    if (err.code === ErrorCode.KEEPALIVE_TIMEOUT) {
      // Its endpoint vanished (see h1-liveness.ts): UNAVAILABLE, 503 for REST, which a caller may retry.
      record.upstreamLost = true;
      return reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
    }
    if (err.code === ErrorCode.QUEUE_FULL) {
      record.upstreamBusy = true;
      return reply(GrpcCode.UNAVAILABLE, err.message);
    }
    if (err.code?.startsWith('HPE_') && socketState.opened) {
      // The answer did not parse as HTTP/1.x: an HTTP/2-only app. This call is
      // answered UNAVAILABLE (safe to retry), the next ones are translated.
      ctx.protocols.notHttp1(target);
      return reply(GrpcCode.UNAVAILABLE, 'the upstream does not speak HTTP/1.1; the next calls go over HTTP/2');
    }
    if (!socketState.opened) record.upstreamUnreachable = true;
    // Connected, then closed without an answer: perhaps no longer the server it was.
    else ctx.protocols.forget(target);
    reply(socketState.opened ? GrpcCode.INTERNAL : GrpcCode.UNAVAILABLE, `upstream ${socketState.opened ? 'closed the connection' : 'unavailable'}: ${err.code ?? err.message}`);
  });

  // The request is made once the endpoint's gate lets the call through; until then the caller's body waits unread.
  sent.req = ctx.h1.request(target, {
    host: target.host,
    port: target.port,
    method,
    path: url,
    headers,
    setHost: false,
    ...(target.tls ? { servername: target.host } : {}),
  }, {
    sent: (upstreamReq) => {
      socketState = countUpstreamSocket(upstreamReq, target, record);
      upstreamReq.on('response', onResponse);
      upstreamReq.on('error', onUpstreamError);
      req.on('data', guard.wrap((chunk: Buffer) => tap.requestData(chunk)));
      req.pipe(upstreamReq);
    },
    failed: onUpstreamError,
  });
  call.sent(target.authority);

  /**
   * gRPC-Web and Connect streams stopped between frames end with their protocol's
   * UNAVAILABLE status frame; anything else has its connection closed.
   */
  const endUpstreamLost = (): void => {
    if (closedBy || res.destroyed) return;
    closedBy = 'upstream';
    // A body of declared length cannot take a frame more.
    const open = tap.responseAtBoundary() && !res.writableEnded && upstreamLength === undefined;
    const ending = open ? upstreamLostEnding(detected.protocol, detected.framed, detected.base64, false) : undefined;
    if (!ending?.body) return void res.destroy();
    record.upstreamEndTime = now();
    tap.responseData(ending.body);
    res.end(ending.body);
  };

  res.on('close', guard.wrap(() => {
    if (res.writableFinished) return call.end(closedBy && { side: closedBy, code: CONNECTION_CLOSED });
    sent.req?.destroy();
    call.end({ side: closedBy ?? 'client', code: CONNECTION_CLOSED });
  }));

  call.enforceDeadline(guard.wrap(() => {
    sent.req?.destroy();
    if (!res.headersSent) return reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    closedBy = 'proxy';
    res.destroy();
  }));

}
