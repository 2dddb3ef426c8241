// gRPC-Web callers (grpc/grpc PROTOCOL-WEB.md) served by an upstream that speaks
// only gRPC over HTTP/2, as Envoy's grpc_web filter does:
//
//   gRPC-Web                                 gRPC
//   application/grpc-web[+proto]             application/grpc+proto, te: trailers
//   application/grpc-web-text[+proto]        the same, the body base64-decoded on the way in
//   messages in 5-byte frames                the same frames
//   trailers as a last frame, flag 0x80,     HTTP/2 trailers (or a trailers-only header block)
//     "name:value\r\n" lines
//
// Over HTTP/1.1 too: the browser's connection need not be HTTP/2.
import type { Call } from '../call/call.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { decodeBase64Runs } from '../protocol/message-framing.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import type { Caller } from './caller.ts';
import { EnvelopeFlag, envelope } from '../protocol/grpc-envelope.ts';
import { requestMetadata, responseMetadata, startGrpcCall, type GrpcCallHandle, type GrpcEnd } from './grpc-upstream-call.ts';
import type { TranscodeMetrics } from './transcode-metrics.ts';

/** Base64 arrives in chunks cut anywhere: decode whole 4-character groups, keep the rest. */
class Base64Reader {
  private rest = '';
  push(chunk: Buffer): Buffer {
    const text = this.rest + chunk.toString('latin1').replace(/\s/gu, '');
    const whole = text.length - (text.length % 4);
    this.rest = text.slice(whole);
    return decodeBase64Runs(text.slice(0, whole));
  }
}

/** grpc-message percent-encodes what is not printable ASCII, and `%` (PROTOCOL-HTTP2.md). */
function grpcMessage(text: string): string {
  return text.replace(/[^\x20-\x24\x26-\x7e]/gu, (c) => encodeURIComponent(c));
}

function trailerFrame(end: GrpcEnd): Buffer {
  let text = `grpc-status:${end.code}\r\n`;
  if (end.message) text += `grpc-message:${grpcMessage(end.message)}\r\n`;
  const details = end.trailers['grpc-status-details-bin'] ?? end.headers['grpc-status-details-bin'];
  if (typeof details === 'string') text += `grpc-status-details-bin:${details}\r\n`;
  // A trailers-only answer carried its trailing metadata in its one header block.
  const trailing = end.headers['grpc-status'] !== undefined ? end.headers : end.trailers;
  for (const [name, value] of Object.entries(responseMetadata(trailing))) {
    for (const v of Array.isArray(value) ? value : [value]) text += `${name}:${v}\r\n`;
  }
  return envelope(Buffer.from(text, 'latin1'), EnvelopeFlag.GRPC_WEB_TRAILERS);
}

export function bridgeGrpcWeb(ctx: ProxyContext, metrics: TranscodeMetrics, call: Call, caller: Caller, path: string, contentType: string, text: boolean, extraHeaders: Record<string, string>): void {
  const { record, tap } = call;
  const rpc = path.slice(1).split('?')[0]!;
  let translateNs = 0n;
  const target = ctx.config.grpcUpstream ? ctx.upstreams.pick(record.connectionId, true)?.target : call.target;
  metrics.translated(record.protocol, 'grpc_web_to_grpc', rpc);

  const send = (bytes: Buffer): void => {
    const t0 = process.hrtime.bigint();
    const out = text ? Buffer.from(bytes.toString('base64')) : bytes;
    translateNs += process.hrtime.bigint() - t0;
    tap.responseData(out);
    if (!caller.write(out) && up.handle) {
      const h = up.handle;
      h.pause();
      caller.onDrain(() => h.resume());
    }
  };
  const start = (metadata: Record<string, string | string[]>): void => {
    if (caller.headersSent) return;
    const out = { ...metadata, ...extraHeaders, 'content-type': contentType };
    tap.responseHeaders(200, out);
    caller.respond(200, out);
  };

  // Assigned after startGrpcCall returns, which may already have ended the call: `send` must not reach it before.
  const up: { handle?: GrpcCallHandle } = {};
  const handle = target
    ? startGrpcCall(ctx, call, target, rpc, requestMetadata(caller.headers), {
        onHeaders(h) {
          if (h['grpc-status'] === undefined) start(responseMetadata(h));
        },
        onFrame(f) {
          send(envelope(f.message, f.flags));
        },
        onEnd(end) {
          start(end.headers['grpc-status'] !== undefined ? {} : responseMetadata(end.headers));
          send(trailerFrame(end));
          caller.end();
        },
      })
    : undefined;
  up.handle = handle;
  if (!handle) {
    start({});
    send(trailerFrame({ code: GrpcCode.UNAVAILABLE, message: 'no upstream endpoint', headers: {}, trailers: {} }));
    caller.end();
  }

  caller.onDone((finished, resetCode) => {
    if (translateNs > 0n) metrics.translateTime('grpc_web_to_grpc', Number(translateNs) / 1e9);
    if (finished) return call.end();
    handle?.cancel();
    call.end({ side: 'client', code: resetCode ?? -1 });
  });

  const decoder = text ? new Base64Reader() : undefined;
  caller.onBody(
    (chunk) => {
      tap.requestData(chunk);
      if (!handle) return;
      const t0 = process.hrtime.bigint();
      const bytes = decoder ? decoder.push(chunk) : chunk;
      translateNs += process.hrtime.bigint() - t0;
      if (bytes.length > 0) handle.write(bytes);
    },
    () => handle?.end(),
  );
}
