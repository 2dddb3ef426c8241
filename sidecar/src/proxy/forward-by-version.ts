// Where a call goes, by the HTTP version its caller spoke and the one spoken to
// its upstream endpoint (fixed by flag, or with `auto` the caller's own where the
// endpoint speaks it, learned once per endpoint):
//
//   caller    upstream   forwarder
//   HTTP/2    HTTP/2     forward-h2.ts         (frames as they came)
//   HTTP/2    HTTP/1.1   forward-h2-to-h1.ts   (gRPC: UNAVAILABLE, it needs HTTP/2 end to end)
//   HTTP/1.1  HTTP/1.1   forward-h1.ts
//   HTTP/1.1  HTTP/2     forward-h1-to-h2.ts
//
// The first call to an endpoint whose version is not known yet waits for it to
// be learned; a caller that leaves meanwhile still ends its call.
import type http from 'node:http';
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { CONNECTION_CLOSED, type HttpVersion } from '../protocol/vocabulary.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { detectRequest, isGrpcFamily } from '../protocol/detect.ts';
import { Call } from '../call/call.ts';
import { clientResetCode, watchClientReset } from './client-reset.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { forwardH1 } from './forward-h1.ts';
import { forwardH1ToH2 } from './forward-h1-to-h2.ts';
import { forwardH2 } from './forward-h2.ts';
import { forwardH2ToH1 } from './forward-h2-to-h1.ts';
import type { Inbound } from '../call/inbound.ts';
import { abandonH1, abandonH2 } from './call-guard.ts';
import { Http2Error } from '../protocol/reset-codes.ts';

const ignore = (): void => {};


function inbound(ctx: ProxyContext, conn: ConnectionRecord, version: HttpVersion, method: string, path: string, headers: http.IncomingHttpHeaders, rawHeaders: readonly string[] | undefined): Inbound {
  const { detected, bare, contentType } = detectRequest(method, path, headers, ctx.config.trpcPrefix);
  const call = new Call(ctx, conn, detected, version, method, bare, headers);
  return { call, detected, method, path, contentType, rawHeaders };
}

/**
 * Run `go` with the upstream's version: now when it is known (or there is no
 * upstream: the caller's own forwarder answers that), else once it is learned.
 * An endpoint that could not be asked gets the caller's version, whose forwarder
 * reports it unreachable the usual way. A throw from `go` once the version is
 * learned comes after the listener's own try/catch has returned: `abandon` ends
 * the call as the listener would have.
 */
function withUpstreamVersion(ctx: ProxyContext, call: Call, callerVersion: HttpVersion, callerLeft: (onLeave: () => void) => () => void, go: (version: HttpVersion, target: UpstreamUrl | undefined) => void, abandon: (err: unknown) => void): void {
  const target = call.target;
  if (!target) return go(callerVersion, undefined);
  const grpcFamily = isGrpcFamily(call.record.protocol);
  const known = ctx.protocols.versionFor(target, grpcFamily, callerVersion);
  if (known) return go(known, target);
  let left = false;
  const stopWatching = callerLeft(() => (left = true));
  void ctx.protocols.learn(target, callerVersion).then(() => {
    stopWatching();
    if (left) return;
    try {
      go(ctx.protocols.versionFor(target, grpcFamily, callerVersion) ?? callerVersion, target);
    } catch (err) {
      abandon(err);
    }
  });
}

/**
 * `onClientReset` hears of each call its client reset before the response ended:
 * the listener's budget against rapid-reset floods. `rawHeaders` (the 'stream'
 * event's fourth argument) keeps repeated fields apart; without it they go on
 * joined, as Node's header object holds them.
 */
export function forwardStream(ctx: ProxyContext, conn: ConnectionRecord, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, onClientReset: () => void = ignore, rawHeaders?: readonly string[]): void {
  // Failures surface as 'close' with rstCode; an unheard 'error' would crash the process.
  stream.on('error', ignore);
  const arrived = inbound(ctx, conn, '2', headers[':method'] ?? 'GET', headers[':path'] ?? '/', headers, rawHeaders);
  // Reset by its client (or cut with its connection) before the proxy could read it:
  // counted as the client's reset, and nothing goes upstream — a rapid-reset flood
  // must not be passed on to the app.
  if (stream.destroyed) {
    const code = clientResetCode(stream, stream.session, false);
    arrived.call.end({ side: 'client', code });
    if (code !== CONNECTION_CLOSED) onClientReset();
    return;
  }
  if (ctx.translating?.h2(ctx, arrived, stream, headers)) return;
  const clientReset = watchClientReset(stream);
  const callerLeft = (onLeave: () => void): (() => void) => {
    const onClose = (): void => {
      onLeave();
      const code = clientReset();
      arrived.call.end({ side: 'client', code });
      if (code !== CONNECTION_CLOSED) onClientReset();
    };
    stream.once('close', onClose);
    return () => stream.off('close', onClose);
  };
  withUpstreamVersion(ctx, arrived.call, '2', callerLeft, (version, target) => {
    if (version === '2' || !target) forwardH2(ctx, arrived, stream, headers, clientReset, onClientReset);
    else forwardH2ToH1(ctx, arrived, stream, headers, target, clientReset, onClientReset);
  }, (err) => {
    ctx.faults.internalError('forward_h2', err);
    abandonH2(stream);
    arrived.call.end({ side: 'proxy', code: Http2Error.INTERNAL_ERROR });
  });
}

export function forwardRequest(ctx: ProxyContext, conn: ConnectionRecord, req: http.IncomingMessage, res: http.ServerResponse, closing: () => boolean): void {
  const arrived = inbound(ctx, conn, '1.1', req.method ?? 'GET', req.url ?? '/', req.headers, req.rawHeaders);
  if (ctx.translating?.h1(ctx, arrived, req, res)) return;
  const callerLeft = (onLeave: () => void): (() => void) => {
    const onClose = (): void => {
      onLeave();
      arrived.call.end({ side: 'client', code: CONNECTION_CLOSED });
    };
    res.once('close', onClose);
    return () => res.off('close', onClose);
  };
  withUpstreamVersion(ctx, arrived.call, '1.1', callerLeft, (version, target) => {
    if (version === '1.1' || !target) forwardH1(ctx, arrived, req, res, closing);
    else forwardH1ToH2(ctx, arrived, req, res, closing, target);
  }, (err) => {
    ctx.faults.internalError('forward_h1', err);
    abandonH1(res);
    arrived.call.end({ side: 'proxy', code: CONNECTION_CLOSED });
  });
}
