// One relayed stream's observation: the call it is, read off the request and
// response frames as they pass, fed to the same Call (and so the same records
// and metrics) as the terminating path.
import type http2 from 'node:http2';
import type { ConnectionRecord } from '../call/observer.ts';
import { detectRequest } from '../protocol/detect.ts';
import { addField, emptyHeaderBag, withValue, type HeaderBag } from '../protocol/header-bag.ts';
import { headerText } from '../protocol/header-text.ts';
import { now } from '../clock.ts';
import { Call } from '../call/call.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { HeaderList } from './hpack-decoder.ts';
import { Http2Error } from '../protocol/reset-codes.ts';

/** The decoded block as the header object node:http2 would give (repeated names become a list). */
export function headerBag(list: HeaderList): HeaderBag {
  const bag = emptyHeaderBag();
  for (let i = 0; i < list.length; i += 2) addField(bag, list[i]!, list[i + 1]!);
  return bag;
}

/** The fields a relay reads of a response header block, each its first value as headerText(headerBag(list)[name]) gives it. */
export type ResponseFields = Record<string, string | undefined>;

/**
 * A response header block's status, content-type and gRPC status (a trailers-only
 * answer's), or a trailer block's gRPC status: all the call's record and tap read
 * of an answer. One object of one shape, not an object keyed by every field the
 * block holds, on each of a call's two response blocks.
 */
export function responseFields(list: HeaderList): ResponseFields {
  let status: string | undefined;
  let contentType: string | undefined;
  let grpcStatus: string | undefined;
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (name === ':status') status ??= list[i + 1];
    else if (name === 'content-type') contentType ??= list[i + 1];
    else if (name === 'grpc-status') grpcStatus ??= list[i + 1];
  }
  return { ':status': status, 'content-type': contentType, 'grpc-status': grpcStatus };
}


/** The request fields a call reads, each as headerBag(list) has it; one shape for every request. */
class RequestFieldSet {
  ':method': string | string[] | undefined = undefined;
  ':path': string | string[] | undefined = undefined;
  'content-type': string | string[] | undefined = undefined;
  'connect-protocol-version': string | string[] | undefined = undefined;
  'grpc-timeout': string | string[] | undefined = undefined;
  'connect-timeout-ms': string | string[] | undefined = undefined;
  traceparent: string | string[] | undefined = undefined;
  tracestate: string | string[] | undefined = undefined;
}

/** The names RequestFieldSet holds: all a call reads of its request's header block. */
export const REQUEST_FIELDS = [':method', ':path', 'content-type', 'connect-protocol-version', 'grpc-timeout', 'connect-timeout-ms', 'traceparent', 'tracestate'] as const;

/**
 * A request header block's fields that the call reads — its method and path, what
 * detection reads (content-type, connect-protocol-version), the deadline
 * (grpc-timeout, connect-timeout-ms) and the trace context (traceparent,
 * tracestate) — each as headerBag(list) gives it, the rest left out. Used by the
 * balanced relay, whose request goes on as the decoded list: an object of one
 * shape, written by name, rather than one keyed by every field the block holds
 * (V8's megamorphic keyed stores and loads, on every call).
 */
export function requestFields(list: HeaderList): HeaderBag {
  const f = new RequestFieldSet();
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    const value = list[i + 1]!;
    if (name === ':method') f[':method'] = withValue(f[':method'], value);
    else if (name === ':path') f[':path'] = withValue(f[':path'], value);
    else if (name === 'content-type') f['content-type'] = withValue(f['content-type'], value);
    else if (name === 'connect-protocol-version') f['connect-protocol-version'] = withValue(f['connect-protocol-version'], value);
    else if (name === 'grpc-timeout') f['grpc-timeout'] = withValue(f['grpc-timeout'], value);
    else if (name === 'connect-timeout-ms') f['connect-timeout-ms'] = withValue(f['connect-timeout-ms'], value);
    else if (name === 'traceparent') f.traceparent = withValue(f.traceparent, value);
    else if (name === 'tracestate') f.tracestate = withValue(f.tracestate, value);
  }
  return f as unknown as HeaderBag;
}

export class RelayStream {
  readonly call: Call;
  /** Final response headers seen (1xx excluded). */
  responded = false;
  /** The upstream's END_STREAM was seen. */
  responseEnded = false;
  /** The client's END_STREAM was seen. */
  requestEnded = false;
  private trailers = false;
  /** The request's content-type, for an answer the relay gives itself. */
  readonly contentType: string | undefined;
  /** gRPC-Web text mode: an ending the relay writes into the body goes base64. */
  readonly base64: boolean;
  /**
   * What the client's window for this stream still takes (RFC 9113 §6.9): its
   * initial size and WINDOW_UPDATEs, less the DATA sent on it. The relay's own
   * DATA fits in it.
   */
  clientWindow: number;
  /**
   * The request as decoded and its body so far, while the call may be sent again:
   * until the response begins or the body outgrows RETRY_BODY_LIMIT.
   */
  request: string[] | undefined;
  body: Buffer[] | undefined = [];
  /** The request body's octets so far, held or not. */
  bodyBytes = 0;
  /** The request header list's size (RFC 7541 §4.1), kept for the call's life. */
  headerBytes = 0;
  /** Its record on the relay's own connections (relay-detour.ts), once sent there. */
  detour: DetourStream | undefined;

  constructor(ctx: ProxyContext, conn: ConnectionRecord, headers: HeaderBag, upstreamAuthority: string, clientWindow: number) {
    const method = headerText(headers[':method']) ?? 'GET';
    const { detected, bare, contentType } = detectRequest(method, headerText(headers[':path']) ?? '/', headers, ctx.config.trpcPrefix);
    this.contentType = contentType;
    this.base64 = detected.base64;
    this.clientWindow = clientWindow;
    this.call = new Call(ctx, conn, detected, '2', method, bare, headers);
    this.call.sent(upstreamAuthority);
  }

  /** Sent on a connection of the relay's own instead: the original upstream's frames for it are not its answer. */
  get via(): http2.ClientHttp2Stream | undefined {
    return this.detour?.via;
  }

  /** A response header block: the headers, or (after them) the trailers; a 1xx is neither. */
  responseHeaders(headers: HeaderBag | ResponseFields, connectedAt: number | undefined): void {
    const { record, tap } = this.call;
    if (this.responded) {
      this.trailers = true;
      return tap.responseTrailers(headers);
    }
    const status = Number(headerText(headers[':status']));
    if (status >= 100 && status < 200) return;
    this.responded = true;
    record.upstreamHeadersTime = now();
    // A call that waited for the upstream connection reached the upstream only once it was up.
    if (connectedAt !== undefined && connectedAt > record.upstreamStartTime!) record.upstreamStartTime = connectedAt;
    tap.responseHeaders(status, headers);
  }

  /** The response carried its own proof of completeness: trailers, or its protocol's status frame. */
  provedEnd(): boolean {
    return this.trailers || this.call.tap.sawEndFrame();
  }

  responseEnd(): void {
    this.responseEnded = true;
    this.call.record.upstreamEndTime = now();
  }
}

/** What the relay writes itself toward the client for a stream it sent on another connection, in order. */
export type Piece =
  | { kind: 'headers'; fields: [string, string][]; end: boolean }
  | { kind: 'data'; bytes: Buffer; end: boolean }
  | { kind: 'rst'; code: number; reset: { side: 'upstream' | 'proxy'; code: number } | undefined };

/** A call sent on a connection of the relay's own, for the rest of its life (RelayStream.detour). */
export class DetourStream {
  /** Its stream there, once the request went: the relayed upstream's frames for it are not its answer. */
  via: http2.ClientHttp2Stream | undefined;
  /** Sent a second time already: never a third. */
  retried = false;
  /** Its answer, waiting for the client's windows and frame boundaries. */
  out: Piece[] = [];
  outBytes = 0;
  /** The last piece of its answer is queued. */
  outEnded = false;

  /** @param sending the detour's streams whose answer has pieces waiting, this one among them at times */
  constructor(readonly id: number, readonly stream: RelayStream, private readonly sending: Map<number, DetourStream>) {}

  /** The call ended: nothing more of its answer is written, and (`reset`: not whole) its stream here ends too. */
  ended(reset: boolean): void {
    this.sending.delete(this.id);
    if (reset && this.via && !this.via.closed) this.via.close(Http2Error.CANCEL);
  }

  /** The relay answers the call itself (its deadline passed): its stream here stops, and its answer is dropped. */
  drop(): void {
    if (this.via && !this.via.closed) this.via.close(Http2Error.CANCEL);
    this.via = undefined;
    this.out = [];
    this.sending.delete(this.id);
  }
}
