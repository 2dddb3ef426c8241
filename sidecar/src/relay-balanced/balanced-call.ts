// One call on the balanced relay: a client's stream joined to a stream on the
// connection of the endpoint its pick chose. Header lists go across decoded and
// are encoded anew for the other hop (h2-hop.ts); DATA payloads go across as they
// are; each side's credit goes back once the octets left on the other side.
//
// How a call ends, and what each side sees — the terminating path's guarantees
// (proxy/forward-h2.ts), kept here at frame level:
//
// | event                                            | the client gets                                  | the call ends as        |
// |--------------------------------------------------|--------------------------------------------------|-------------------------|
// | response ended, request ended                    | the endpoint's frames                            | whole                   |
// | endpoint reset before its response ended         | RST_STREAM with the endpoint's code              | reset by the upstream   |
// | refused unprocessed (REFUSED_STREAM, or past the GOAWAY's last id), body held | nothing: sent once more on another connection | as that attempt ends |
// | endpoint connection never came up                | a local UNAVAILABLE in its protocol              | upstream unreachable    |
// | endpoint connection lost, no response yet        | a local UNAVAILABLE ("upstream connection lost") | upstream, connection closed |
// | lost mid-response, between protocol frames      | the protocol's own UNAVAILABLE ending            | upstream, connection closed |
// | lost mid-frame (or REST)                         | RST_STREAM INTERNAL_ERROR                        | upstream, connection closed |
// | client reset, or its connection closed           | -                                                | reset by the client     |
// | deadline passed (--enforce-deadlines)            | DEADLINE_EXCEEDED, or RST_STREAM CANCEL once answering | proxy, CANCEL     |
import type { ConnectionRecord } from '../call/observer.ts';
import { Call, type CallStart } from '../call/call.ts';
import { noopTracing, type HeaderBag } from '../call/call-tracing.ts';
import { CONNECTION_CLOSED, type CallReset } from '../protocol/vocabulary.ts';
import { detectRequest, isGrpcFamily, type Detected } from '../protocol/detect.ts';
import { headerText } from '../protocol/header-text.ts';
import { localReply, upstreamLostEnding, UPSTREAM_LOST, type LocalCode } from '../protocol/local-reply.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import { now } from '../clock.ts';
import type { HeaderList } from '../relay/hpack-decoder.ts';
import { requestFields, responseFields } from '../relay/relay-stream.ts';
import type { ProxyContext } from '../upstream/context.ts';
import type { UpstreamUrl } from '../config/parse-value.ts';
import { RETRY_BODY_LIMIT, type RetryReason } from '../upstream/upstream-retries.ts';
import type { EndpointHop, EndpointHops, EndpointStreamSink } from './endpoint-hops.ts';
import type { H2Hop, HopStream, StreamSink } from './h2-hop.ts';
import { streamEnded, whenWritten, type Written } from './hop-output.ts';

/** What a call tells the client connection it is on. */
export interface CallHooks {
  ended(id: number): void;
  /** The client reset the call before its answer began (the rapid-reset budget). */
  resetBeforeAnswer(): void;
  /** Whether `octets` more may be kept for the connection's calls (their requests and bodies, while they may be sent again); if so, they are counted. */
  retain(octets: number): boolean;
  /** `octets` kept are let go. */
  release(octets: number): void;
}

/** Where the response to the client stands: nothing sent, headers sent, or its last frame queued. */
type Response = 'pending' | 'streaming' | 'ended';

/** The client's stream's sink: what the client sends on the call goes to its BalancedCall. */
class ClientSide implements StreamSink {
  constructor(private readonly call: BalancedCall) {}
  headers(list: HeaderList, end: boolean): void {
    this.call.requestHeaders(list, end);
  }
  data(chunk: Buffer, end: boolean): void {
    this.call.requestData(chunk, end);
  }
  reset(code: number): void {
    this.call.requestReset(code);
  }
  sent(octets: number): void {
    this.call.responseSent(octets);
  }
}

/**
 * One call: the client's stream (its sink a ClientSide) joined to a stream on an
 * endpoint connection, whose sink the call is itself (the EndpointStreamSink
 * methods, headers to refused).
 */
export class BalancedCall implements EndpointStreamSink, Written {
  /** The call, once made (begin): read through `call`, which makes it when something needs it sooner. */
  private started: Call | undefined;
  private readonly down: HopStream;
  private ep: EndpointHop | undefined;
  private up: HopStream | undefined;
  /** The request as sent to the endpoint, kept while the call may be sent again. */
  private request: HeaderList | undefined;
  private body: Buffer[] | undefined = [];
  private bodyBytes = 0;
  /** What the connection's budget counts for this call: its request header list and held body, until the response begins. */
  private kept: number;
  private requestEnded: boolean;
  private response: Response = 'pending';
  private responseEnded = false;
  private trailersSeen = false;
  private retried = false;
  /** Octets of a request body sent again: credited to the client once already. */
  private resent = 0;
  private ended = false;
  /** Whether the call's end is recorded. */
  private recorded = false;
  private readonly contentType: string | undefined;
  private readonly base64: boolean;
  /** How the call ended, for its record once written. */
  private endReset: CallReset | undefined;
  /** What the call is made from (begin), until it is made. */
  private pending: PendingStart | undefined;

  constructor(
    private readonly ctx: ProxyContext,
    conn: ConnectionRecord,
    private readonly client: H2Hop,
    id: number,
    list: HeaderList,
    /** What the call reads of `list` (requestShape). */
    shape: RequestShape,
    end: boolean,
    /** The request header list's size (RFC 7541 §4.1), counted by the connection before the call is made. */
    headerBytes: number,
    private readonly endpoints: EndpointHops,
    private readonly connection: CallHooks,
  ) {
    const startTime = now();
    this.kept = headerBytes;
    const { detected, contentType } = shape;
    this.contentType = contentType;
    this.base64 = detected.base64;
    this.requestEnded = end;
    const pick = ctx.upstreams.pick(conn.id, isGrpcFamily(detected.protocol));
    this.pending = { conn, shape, start: { startTime, pick }, sentAt: undefined, tapped: undefined };
    this.down = client.accept(id, new ClientSide(this));
    const target = pick?.target;
    if (!target) {
      this.call.record.upstreamUnreachable = true;
      this.reply(GrpcCode.UNAVAILABLE, 'no upstream endpoint known');
      this.finish();
      return;
    }
    // Traced calls are made first: the endpoint gets the call's traceparent.
    const traceparent = ctx.tracing === noopTracing ? undefined : this.call.traceparent;
    this.request = upstreamRequest(list, target.tls, traceparent);
    this.attempt(target);
    // The rest waits until the request's octets are written (hop-output.ts): the
    // call's record, route, tap and metrics are not on the request's way.
    if (this.pending !== undefined) whenWritten(this);
  }

  /**
   * The call: made now if it was not yet. Its record dates from the request's
   * arrival and its upstream start from the request's sending, as if it were
   * made at once; the request DATA read before is tapped now, in order.
   */
  get call(): Call {
    return this.started ?? this.begin();
  }

  private begin(): Call {
    const p = this.pending!;
    const { detected, method, bare, headers } = p.shape;
    const call = (this.started = new Call(this.ctx, p.conn, detected, '2', method, bare, headers, p.start));
    // Cleared once made: a call that failed to be made is tried again by whatever needs it, and fails as it did.
    this.pending = undefined;
    if (p.sentAt !== undefined) call.sent(p.start.pick!.target.authority, p.sentAt);
    if (p.tapped !== undefined) for (const chunk of p.tapped) call.tap.requestData(chunk);
    call.enforceDeadline(() => this.deadline());
    return call;
  }

  private attempt(target: UpstreamUrl): void {
    const ep = (this.ep = this.endpoints.get(target));
    const up = (this.up = ep.open(this.request!, this.requestEnded && this.bodyBytes === 0, this));
    const pending = this.pending;
    if (pending !== undefined) pending.sentAt = now();
    else if (this.retried) this.call.record.upstream = target.authority;
    else this.call.sent(target.authority);
    if (this.body && this.bodyBytes > 0) {
      this.resent = this.bodyBytes;
      for (let i = 0; i < this.body.length; i++) ep.hop.data(up, this.body[i]!, this.requestEnded && i === this.body.length - 1);
    }
  }

  /** Request trailers: gRPC sends none; passed on as they are. */
  requestHeaders(list: HeaderList, end: boolean): void {
    if (end) this.requestEnded = true;
    if (this.up && this.ep) this.ep.hop.headers(this.up, list, end);
    if (end) this.maybeEnd();
  }

  requestData(chunk: Buffer, end: boolean): void {
    if (end) this.requestEnded = true;
    if (chunk.length > 0) {
      const pending = this.pending;
      if (pending === undefined) this.call.tap.requestData(chunk);
      else (pending.tapped ??= []).push(chunk);
      this.hold(chunk);
    }
    if (this.up && this.ep) this.ep.hop.data(this.up, chunk, end);
    else if (chunk.length > 0) this.client.consumed(this.down, chunk.length);
    if (end) this.maybeEnd();
  }

  requestReset(code: number): void {
    if (this.response === 'pending' && !this.ended) this.connection.resetBeforeAnswer();
    this.clientReset(code);
  }

  /** `octets` of the response reached the client's socket: the endpoint may send as many more. */
  responseSent(octets: number): void {
    if (this.up && this.ep) this.ep.hop.consumed(this.up, octets);
  }

  // The endpoint stream's sink (EndpointStreamSink).

  /** Response headers or trailers. */
  headers(list: HeaderList, end: boolean): void {
    this.responseHeaders(list, end);
  }

  data(chunk: Buffer, end: boolean): void {
    // Passed on first: the answer's last frame may be written at once (streamEnded), the call's bookkeeping after it.
    this.client.data(this.down, chunk, end);
    if (end) streamEnded(this.client);
    if (chunk.length > 0) this.call.tap.responseData(chunk);
    if (end) {
      this.responseComplete();
      this.maybeEnd();
    }
  }

  reset(code: number): void {
    this.endpointReset(code);
  }

  /** `octets` of the request reached the endpoint's socket: the client may send as many more, less what was sent again. */
  sent(octets: number): void {
    const skip = Math.min(octets, this.resent);
    this.resent -= skip;
    if (octets - skip > 0) this.client.consumed(this.down, octets - skip);
  }

  lost(reached: boolean, error: Error | undefined): void {
    this.connectionLost(reached, error);
  }

  refused(): void {
    this.refusedUnprocessed('goaway');
  }

  /** Request body, held while the call may be sent again (until the response begins, within RETRY_BODY_LIMIT). */
  private hold(chunk: Buffer): void {
    this.bodyBytes += chunk.length;
    if (!this.body) return;
    if (this.bodyBytes > RETRY_BODY_LIMIT || !this.connection.retain(chunk.length)) return this.letGo();
    this.kept += chunk.length;
    this.body.push(chunk);
  }

  /** The call is no longer sent again: its request and body are let go, and leave the connection's budget. */
  private letGo(): void {
    this.body = undefined;
    this.request = undefined;
    this.connection.release(this.kept);
    this.kept = 0;
  }

  private responseHeaders(list: HeaderList, end: boolean): void {
    // Passed on first, as DATA is (data); `list` holds until the next block is decoded.
    this.client.headers(this.down, list, end);
    if (end) streamEnded(this.client);
    const { record, tap } = this.call;
    const headers = responseFields(list);
    if (this.response !== 'pending') {
      this.trailersSeen = true;
      tap.responseTrailers(headers);
    } else {
      const status = Number(headerText(headers[':status']));
      if (status >= 200) {
        this.response = 'streaming';
        this.letGo();
        record.upstreamHeadersTime = now();
        const connectedAt = this.ep?.link.connectedAt;
        if (connectedAt !== undefined && connectedAt > record.upstreamStartTime!) record.upstreamStartTime = connectedAt;
        tap.responseHeaders(status, headers);
      }
    }
    if (end) {
      this.responseComplete();
      this.maybeEnd();
    }
  }

  private responseComplete(): void {
    this.responseEnded = true;
    this.response = 'ended';
    this.call.record.upstreamEndTime = now();
  }

  /** Both sides done: the call is whole. */
  private maybeEnd(): void {
    if (this.responseEnded && this.requestEnded) this.finish();
  }

  /** The endpoint reset the call's stream. */
  private endpointReset(code: number): void {
    if (this.ended) return;
    if (code === Http2Error.REFUSED_STREAM && this.response === 'pending' && this.refusedUnprocessed('refused_stream')) return;
    this.client.reset(this.down, code);
    // A response that ended, or proved its end (trailers, a status frame), is whole: the reset only stops the request (RFC 9113 §8.1).
    if (this.responseEnded && (code === Http2Error.NO_ERROR || this.trailersSeen || this.call.tap.sawEndFrame())) return this.finish();
    this.finish({ side: 'upstream', code });
  }

  /** The endpoint never worked on the call: sent once more if its whole body is at hand; true if so. */
  private refusedUnprocessed(reason: RetryReason): boolean {
    if (this.ended) return true;
    this.doneUpstream();
    if (!this.retried && this.body && this.response === 'pending') {
      this.retried = true;
      this.ctx.retries.retried(reason);
      this.attempt(this.call.target!);
      return true;
    }
    this.client.reset(this.down, Http2Error.REFUSED_STREAM);
    this.finish({ side: 'upstream', code: Http2Error.REFUSED_STREAM });
    return true;
  }

  /** The endpoint's connection went before the call ended. */
  private connectionLost(reached: boolean, error: Error | undefined): void {
    if (this.ended) return;
    const { record, tap } = this.call;
    this.up = undefined;
    // The response was whole already: only the request side stops (RFC 9113 §8.1), and the call ends whole.
    if (this.responseEnded) {
      this.client.reset(this.down, Http2Error.NO_ERROR);
      return this.finish();
    }
    if (!reached) {
      record.upstreamUnreachable = true;
      const code = (error as { code?: string } | undefined)?.code;
      this.reply(GrpcCode.UNAVAILABLE, `upstream unavailable: ${code ?? error?.message ?? 'connection failed'}`);
      return this.finish();
    }
    record.upstreamLost = true;
    const reset: CallReset = { side: 'upstream', code: CONNECTION_CLOSED };
    if (this.response === 'pending') {
      this.reply(GrpcCode.UNAVAILABLE, UPSTREAM_LOST);
      return this.finish(reset);
    }
    record.upstreamEndTime = now();
    const { protocol, framed } = record;
    const ending = tap.responseAtBoundary() ? upstreamLostEnding(protocol, framed, this.base64, true) : undefined;
    if (!ending) this.client.reset(this.down, Http2Error.INTERNAL_ERROR);
    else {
      if (ending.body) {
        tap.responseData(ending.body);
        this.client.data(this.down, ending.body, !ending.trailers);
      }
      if (ending.trailers) {
        tap.responseTrailers(ending.trailers);
        this.client.headers(this.down, Object.entries(ending.trailers).flat(), true);
      }
      if (!this.requestEnded) this.client.reset(this.down, Http2Error.NO_ERROR);
    }
    this.finish(reset);
  }

  /** --enforce-deadlines: the caller's deadline passed. */
  private deadline(): void {
    if (this.ended) return;
    this.cancelUpstream(Http2Error.CANCEL);
    if (this.response === 'pending') {
      this.reply(GrpcCode.DEADLINE_EXCEEDED, 'deadline exceeded');
      return this.finish();
    }
    this.client.reset(this.down, Http2Error.CANCEL);
    this.finish({ side: 'proxy', code: Http2Error.CANCEL });
  }

  /** The client reset its stream. */
  clientReset(code: number): void {
    if (this.ended) return;
    this.cancelUpstream(code === Http2Error.NO_ERROR || code === CONNECTION_CLOSED ? Http2Error.CANCEL : code);
    if (this.responseEnded) return this.finish();
    this.finish({ side: 'client', code });
  }

  /** The client's connection is gone with the call open. */
  clientGone(): void {
    this.clientReset(CONNECTION_CLOSED);
  }

  /** The relay's own answer, in the call's protocol (protocol/local-reply.ts). */
  private reply(code: LocalCode, message: string): void {
    if (this.response !== 'pending') return;
    this.response = 'ended';
    const { record, tap } = this.call;
    const r = localReply(record.protocol, record.framed, this.contentType, code, message);
    tap.responseHeaders(r.status, r.headers);
    const fields = [':status', String(r.status), ...Object.entries(r.headers).flat()];
    this.client.headers(this.down, fields, !r.body);
    if (r.body) {
      tap.responseData(r.body);
      this.client.data(this.down, r.body, true);
    }
    // The request need not be read further (RFC 9113 §8.1).
    if (!this.requestEnded) this.client.reset(this.down, Http2Error.NO_ERROR);
  }

  private cancelUpstream(code: number): void {
    if (this.up && this.ep) this.ep.hop.reset(this.up, code);
    this.doneUpstream();
  }

  private doneUpstream(): void {
    if (this.up && this.ep) {
      this.ep.done(this.up);
      this.ep.idleCheck();
    }
    this.up = undefined;
  }

  /** Whether the call is over (a call answered as it opened never joins its connection's calls). */
  get over(): boolean {
    return this.ended;
  }

  private finish(reset?: CallReset): void {
    if (this.ended) return;
    this.ended = true;
    this.doneUpstream();
    this.letGo();
    this.endReset = reset;
    // The record, metrics and picker learn of the end once the read that ended it is written (hop-output.ts).
    whenWritten(this);
    this.connection.ended(this.down.id);
  }

  /**
   * The read that sent the request, or ended the call, is written (Written): the
   * call is made if it was not yet, and its end recorded once it ended.
   */
  written(): void {
    try {
      const call = this.call;
      if (!this.ended || this.recorded) return;
      this.recorded = true;
      call.end(this.endReset);
    } catch (err) {
      // Recorded outside the read that ended the call: a fault here stays the observer's.
      this.ctx.faults.internalError('observer', err);
    }
  }
}

/** What a call reads of its request's header list: its fields, method, protocol and path. Read-only: a connection gives one to each call whose block repeats. */
export interface RequestShape {
  readonly headers: HeaderBag;
  readonly method: string;
  readonly detected: Detected;
  /** The path without its query. */
  readonly bare: string;
  readonly contentType: string | undefined;
}

export function requestShape(list: HeaderList, trpcPrefix: string): RequestShape {
  const headers = requestFields(list);
  const method = headerText(headers[':method']) ?? 'GET';
  const { detected, bare, contentType } = detectRequest(method, headerText(headers[':path']) ?? '/', headers, trpcPrefix);
  return { headers, method, detected, bare, contentType };
}

/** What a call is made from, kept from its request's arrival until it is made (BalancedCall.begin). */
interface PendingStart {
  readonly conn: ConnectionRecord;
  readonly shape: RequestShape;
  readonly start: CallStart;
  /** When the request went to the endpoint. */
  sentAt: number | undefined;
  /** Request DATA read before the call was made, for its tap. */
  tapped: Buffer[] | undefined;
}

/** The client's request as the endpoint gets it: its own :scheme, and the call's traceparent when tracing. */
function upstreamRequest(list: HeaderList, tls: boolean, traceparent: string | undefined): HeaderList {
  const out: string[] = [];
  for (let i = 0; i < list.length; i += 2) {
    const name = list[i]!;
    if (name === ':scheme') out.push(name, tls ? 'https' : 'http');
    else if (traceparent === undefined || name !== 'traceparent') out.push(name, list[i + 1]!);
  }
  if (traceparent !== undefined) out.push('traceparent', traceparent);
  return out;
}
