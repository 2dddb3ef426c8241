// One gRPC call to the upstream on the pooled HTTP/2 session, for the
// translating paths: request frames go out as given, response messages come
// back whole, and the call ends with one status however it ends — from the
// trailers, a trailers-only header block, the HTTP status, a reset, or an
// upstream that could not be reached.
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Call } from '../call/call.ts';
import { now } from '../clock.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode, rpcHttpStatusToGrpcCode } from '../protocol/status-codes.ts';
import { FrameReader, type Frame } from './grpc-frame.ts';
import { headerText } from '../protocol/header-text.ts';

export interface GrpcEnd {
  code: number;
  message: string;
  /** Response headers and trailers as the upstream sent them (empty when none came). */
  headers: http2.IncomingHttpHeaders;
  trailers: http2.IncomingHttpHeaders;
}

export interface GrpcCallEvents {
  onHeaders(headers: http2.IncomingHttpHeaders): void;
  /** One whole response frame; return false to pause the upstream until `resume()`. */
  onFrame(frame: Frame): void;
  onEnd(end: GrpcEnd): void;
}

export interface GrpcCallHandle {
  write(chunk: Buffer): void;
  end(): void;
  cancel(): void;
  pause(): void;
  resume(): void;
}

/** The largest response message held whole (gRPC's usual default limit is 4 MiB). */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

// Request headers that are the caller's HTTP business, not the RPC's metadata
// (PROTOCOL-HTTP2.md reserves content-type, te, grpc-* and the pseudo-headers;
// RFC 9110 §7.6.1 the hop-by-hop fields).
const NOT_METADATA = new Set([
  'host', 'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer',
  'content-type', 'content-length', 'accept', 'accept-encoding', 'grpc-encoding', 'grpc-accept-encoding', 'http2-settings',
  'origin', 'referer', 'x-grpc-web', 'x-user-agent', 'access-control-request-method', 'access-control-request-headers',
]);

/** The caller's headers that go on as metadata. */
export function requestMetadata(headers: Record<string, string | string[] | undefined>): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(':') || NOT_METADATA.has(name)) continue;
    out[name] = value;
  }
  return out;
}

export function startGrpcCall(ctx: ProxyContext, call: Call, target: UpstreamUrl, rpc: string, metadata: http2.OutgoingHttpHeaders, ev: GrpcCallEvents): GrpcCallHandle {
  const record = call.record;
  let ended = false;
  const finish = (end: GrpcEnd): void => {
    if (ended) return;
    ended = true;
    record.upstreamEndTime = now();
    ev.onEnd(end);
  };
  const none = { write() {}, end() {}, cancel() {}, pause() {}, resume() {} };
  let pooled;
  let up: http2.ClientHttp2Stream;
  try {
    pooled = ctx.h2.get(target);
    up = pooled.session.request({
      ...metadata,
      ':method': 'POST',
      ':path': `/${rpc}`,
      ':scheme': target.tls ? 'https' : 'http',
      ':authority': target.authority,
      'content-type': 'application/grpc+proto',
      te: 'trailers',
      ...(call.traceparent ? { traceparent: call.traceparent } : {}),
    });
  } catch (err) {
    record.upstreamUnreachable = true;
    finish({ code: GrpcCode.UNAVAILABLE, message: `upstream unavailable: ${(err as Error).message}`, headers: {}, trailers: {} });
    return none;
  }
  const session = pooled;
  call.sent(session.conn.peer);
  session.conn.calls++;
  session.conn.active++;
  const reader = new FrameReader(MAX_MESSAGE_BYTES);
  let headers: http2.IncomingHttpHeaders = {};
  let upstreamError: (Error & { code?: string }) | undefined;
  up.on('error', (err) => (upstreamError = err));
  up.on('response', (h) => {
    headers = h;
    record.upstreamHeadersTime = now();
    if (session.connectedAt !== undefined && session.connectedAt > record.upstreamStartTime!) record.upstreamStartTime = session.connectedAt;
    ev.onHeaders(h);
  });
  up.on('data', (chunk: Buffer) => {
    let frames: Frame[];
    try {
      frames = reader.push(chunk);
    } catch (err) {
      up.close(Http2Error.CANCEL);
      finish({ code: GrpcCode.RESOURCE_EXHAUSTED, message: (err as Error).message, headers, trailers: {} });
      return;
    }
    for (const f of frames) ev.onFrame(f);
  });
  up.on('trailers', (t) => {
    finish({ code: Number(t['grpc-status'] ?? GrpcCode.UNKNOWN), message: decodeMessage(t['grpc-message']), headers, trailers: t });
  });
  up.on('close', () => {
    session.conn.active--;
    if (ended) return;
    const status = Number(headers[':status'] ?? 0);
    if (headers['grpc-status'] !== undefined) {
      // Trailers-only: the status rode in the one header block.
      return finish({ code: Number(headers['grpc-status']), message: decodeMessage(headers['grpc-message']), headers, trailers: {} });
    }
    if (status !== 0 && status !== 200) return finish({ code: rpcHttpStatusToGrpcCode(status), message: `upstream answered HTTP ${status}`, headers, trailers: {} });
    if (!session.connected) {
      record.upstreamUnreachable = true;
      return finish({ code: GrpcCode.UNAVAILABLE, message: `upstream unavailable: ${upstreamError?.code ?? upstreamError?.message ?? 'connection failed'}`, headers, trailers: {} });
    }
    const code = up.rstCode ?? Http2Error.INTERNAL_ERROR;
    if (code !== Http2Error.NO_ERROR) record.reset = { side: 'upstream', code };
    finish({ code: code === Http2Error.REFUSED_STREAM ? GrpcCode.UNAVAILABLE : GrpcCode.INTERNAL, message: `upstream ended the call without a status (${upstreamError?.code ?? `reset ${code}`})`, headers, trailers: {} });
  });
  return {
    write: (chunk) => up.write(chunk),
    end: () => up.end(),
    cancel: () => {
      if (!up.closed && !up.destroyed) up.close(Http2Error.CANCEL);
    },
    pause: () => up.pause(),
    resume: () => up.resume(),
  };
}

/** grpc-message is percent-encoded (PROTOCOL-HTTP2.md, "Status-Message"). */
function decodeMessage(v: string | string[] | undefined): string {
  const text = headerText(v);
  if (!text) return '';
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// Response fields that are the transport's, not metadata a caller reads.
const NOT_RESPONSE_METADATA = new Set(['content-type', 'content-length', 'date', 'grpc-status', 'grpc-message', 'grpc-status-details-bin', 'grpc-encoding', 'grpc-accept-encoding', 'trailer', 'transfer-encoding', 'connection', 'keep-alive']);

/** Header and trailer metadata as plain response headers for a REST caller. */
export function responseMetadata(...blocks: http2.IncomingHttpHeaders[]): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const block of blocks) {
    for (const [name, value] of Object.entries(block)) {
      if (value === undefined || name.startsWith(':') || NOT_RESPONSE_METADATA.has(name) || name.endsWith('-bin')) continue;
      out[name] = value;
    }
  }
  return out;
}
