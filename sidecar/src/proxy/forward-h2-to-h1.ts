// An HTTP/2 call to an upstream that speaks only HTTP/1.1, carried as an
// HTTP/1.1 request: the pseudo-headers become the request line and Host, the
// body streams with backpressure (chunked when its length is not known), and the
// response comes back as HTTP/2 headers, data and — from a chunked response's
// trailer section — trailers. gRPC cannot be carried so (it needs HTTP/2 end to
// end) and is answered UNAVAILABLE.
import http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { H1Call } from '../upstream/h1-agent-pool.ts';
import { countUpstreamSocket, type UpstreamSocketState } from '../upstream/h1-upstream-socket.ts';
import { fieldsFromRaw, filterH2Headers } from '../protocol/hop-by-hop.ts';
import type { Inbound } from '../call/inbound.ts';
import { replyOnH2, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import { GRPC_NEEDS_H2 } from '../upstream/upstream-protocol.ts';
import { ErrorCode } from '../core/errors.ts';
import { abandonH2, CallGuard } from './call-guard.ts';
import { headerText } from '../protocol/header-text.ts';

type RespondOptions = http2.ServerStreamResponseOptions & { sendDate: false };
const NO_BODY: RespondOptions = { endStream: true, sendDate: false };
const WITH_TRAILERS: RespondOptions = { waitForTrailers: true, sendDate: false };

/** HTTP/2 request headers as an HTTP/1.1 header object: Host from :authority, cookies as one line. */
function h1RequestHeaders(headers: http2.IncomingHttpHeaders, rawHeaders: readonly string[] | undefined, target: UpstreamUrl, traceparent: string | undefined, hasBody: boolean): http.OutgoingHttpHeaders {
  const out: Record<string, string | string[]> = {};
  // Repeated fields go on as repeated lines: Node's header object has them joined with ", ".
  if (rawHeaders) fieldsFromRaw(rawHeaders, out, true);
  else filterH2Headers(headers, out);
  // `te: trailers` is an HTTP/2 (gRPC) matter; over HTTP/1.1 TE is hop-by-hop and needs a Connection token.
  delete out.te;
  delete out.host;
  // RFC 9113 §8.2.3: cookie fields split for compression are joined with "; " for HTTP/1.1.
  if (Array.isArray(out.cookie)) out.cookie = out.cookie.join('; ');
  if (traceparent) out.traceparent = traceparent;
  // A body of unknown length goes chunked whatever the method (Node would send a GET's body unframed).
  if (hasBody && out['content-length'] === undefined) out['transfer-encoding'] = 'chunked';
  return { host: headers[':authority'] ?? headerText(headers.host) ?? target.authority, ...out };
}


export function forwardH2ToH1(ctx: ProxyContext, inbound: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, target: UpstreamUrl, clientReset: () => number, onClientReset: () => void): void {
  const { call, detected, method, path, contentType } = inbound;
  const { record, tap } = call;
  let responded = false;
  let responseDone = false;
  let closedBy: CallReset | undefined;
  /** The upstream call, waiting at its endpoint's gate or sent. */
  const sent: { req?: H1Call } = {};
  /** Whether the upstream request reached a connected socket, once it is sent. */
  let socketState: UpstreamSocketState = { opened: false };

  // Every event callback of this call runs through the guard: a throw ends this call only.
  const guard = new CallGuard(ctx.faults, 'forward_h2', () => {
    sent.req?.destroy();
    closedBy ??= { side: 'proxy', code: Http2Error.INTERNAL_ERROR };
    responded = true;
    // Closed already (the fault was in its own 'close'): the call ends here, else at that 'close'.
    if (stream.destroyed) call.end(closedBy);
    abandonH2(stream);
  });

  const reply = (code: LocalCode, message: string): void => {
    if (responded || stream.destroyed) return;
    responded = true;
    responseDone = true;
    replyOnH2(stream, tap, detected, contentType, code, message);
  };

  stream.on('close', guard.wrap(() => {
    if (responseDone) return call.end();
    if (closedBy) return call.end(closedBy);
    sent.req?.destroy();
    const code = clientReset();
    call.end({ side: 'client', code });
    if (code !== CONNECTION_CLOSED) onClientReset();
  }));

  if (detected.protocol === 'grpc') {
    ctx.protocols.grpcRefused(target);
    return reply(GrpcCode.UNAVAILABLE, GRPC_NEEDS_H2);
  }

  const onResponse = guard.wrap((upRes: http.IncomingMessage) => {
    record.upstreamHeadersTime = now();
    const status = upRes.statusCode ?? 502;
    tap.responseHeaders(status, upRes.headers);
    if (stream.destroyed) return upRes.resume();
    const out: Record<string, string | string[]> = {};
    fieldsFromRaw(upRes.rawHeaders, out);
    const bodiless = method === 'HEAD' || status === 204 || status === 304;
    try {
      stream.respond({ ':status': status, ...out }, bodiless ? NO_BODY : WITH_TRAILERS);
    } catch (err) {
      // A header HTTP/1.1 lets through and HTTP/2 refuses (a second content-type, say).
      sent.req?.destroy();
      upRes.resume();
      return reply(GrpcCode.INTERNAL, `the upstream's response cannot be sent over HTTP/2: ${(err as { code?: string }).code ?? (err as Error).message}`);
    }
    responded = true;
    if (bodiless) responseDone = true;
    upRes.on('data', guard.wrap((chunk: Buffer) => tap.responseData(chunk)));
    if (!bodiless) upRes.pipe(stream, { end: false });
    else upRes.resume();
    upRes.on('end', guard.wrap(() => {
      record.upstreamEndTime = now();
      if (upRes.rawTrailers.length) tap.responseTrailers(upRes.trailers);
      if (!bodiless && !stream.destroyed) stream.end();
    }));
    stream.once('wantTrailers', guard.wrap(() => {
      const trailers: Record<string, string | string[]> = {};
      fieldsFromRaw(upRes.rawTrailers, trailers);
      responseDone = true;
      stream.sendTrailers(trailers);
    }));
    upRes.on('aborted', guard.wrap(() => {
      // The upstream closed its connection mid-response: the caller must not take
      // a truncated body for a whole one, so its stream is reset.
      if (stream.destroyed) return;
      closedBy = { side: 'upstream', code: CONNECTION_CLOSED };
      stream.close(Http2Error.INTERNAL_ERROR);
    }));
    upRes.on('error', () => {});
  });

  const onUpstreamError = guard.wrap((err: Error & { code?: string }) => {
    if (record.deadlineEnforced || stream.destroyed || guard.abandoned) return;
    if (responded) {
      closedBy ??= { side: 'upstream', code: CONNECTION_CLOSED };
      stream.close(Http2Error.INTERNAL_ERROR);
      return;
    }
    if (err.code === ErrorCode.KEEPALIVE_TIMEOUT) {
      // Its endpoint vanished (see h1-liveness.ts): UNAVAILABLE, 503 for REST, which a caller may retry.
      record.upstreamLost = true;
      return reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
    }
    if (err.code === ErrorCode.QUEUE_FULL) {
      record.upstreamBusy = true;
      return reply(GrpcCode.UNAVAILABLE, err.message);
    }
    const opened = socketState.opened;
    if (!opened) record.upstreamUnreachable = true;
    // Connected, then closed without an answer: perhaps no longer the server it was.
    else ctx.protocols.forget(target);
    reply(opened ? GrpcCode.INTERNAL : GrpcCode.UNAVAILABLE, `upstream ${opened ? 'closed the connection' : 'unavailable'}: ${err.code ?? err.message}`);
  });

  // The request is made once the endpoint's gate lets the call through; until then the stream's body waits unread.
  sent.req = ctx.h1.request(target, {
    host: target.host,
    port: target.port,
    method,
    path,
    headers: h1RequestHeaders(headers, inbound.rawHeaders, target, call.traceparent, !stream.endAfterHeaders),
    setHost: false,
    ...(target.tls && !net.isIP(target.host) ? { servername: target.host } : {}),
  }, {
    sent: (req) => {
      socketState = countUpstreamSocket(req, target, record);
      req.on('response', onResponse);
      req.on('error', onUpstreamError);
      if (stream.endAfterHeaders) req.end();
      else {
        stream.on('data', guard.wrap((chunk: Buffer) => tap.requestData(chunk)));
        stream.pipe(req);
      }
    },
    failed: onUpstreamError,
  });
  call.sent(target.authority);

  call.enforceDeadline(guard.wrap(() => {
    sent.req?.destroy();
    if (!responded) return reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
    closedBy = { side: 'proxy', code: Http2Error.CANCEL };
    stream.close(Http2Error.CANCEL);
  }));
}
