// Reads a call's facts off the bytes as they pass, without holding them: body
// sizes, message counts, and the status from wherever the protocol puts it —
// trailers, a trailers-only header block, the gRPC-Web trailer frame in the body,
// the Connect end-stream message or the Connect unary error body, and each
// tRPC procedure's result or error.
import type { TappedFacts } from './vocabulary.ts';
import { MessageCounter, connectErrorCode, grpcStatusFromTrailerFrame, parseStatus } from './message-framing.ts';
import { headerText } from './header-text.ts';

/** A Connect unary error body larger than this is not read for its code. */
const MAX_ERROR_BODY = 64 * 1024;

type HeaderValue = string | string[] | number | undefined;
type Headers = Record<string, HeaderValue>;


export class CallTap {
  private readonly requestCounter: MessageCounter | undefined;
  private readonly responseCounter: MessageCounter | undefined;
  private errorBody: Buffer[] | undefined;
  private errorBodyBytes = 0;

  constructor(private readonly call: TappedFacts, base64: boolean, private readonly now: () => number) {
    if (call.framed) {
      this.requestCounter = MessageCounter.forProtocol(call.protocol, base64);
      this.responseCounter = MessageCounter.forProtocol(call.protocol, base64);
    }
  }

  requestData(chunk: Buffer): void {
    this.call.requestBytes += chunk.length;
    if (this.requestCounter) {
      this.requestCounter.push(chunk);
      // Kept current, so a scrape counts a long stream's messages as they pass.
      this.call.requestMessages = this.requestCounter.messages;
    }
  }

  responseHeaders(status: number, headers: Headers): void {
    this.call.httpStatus = status;
    this.call.trpc?.responseHeaders(headerText(headers['content-type']), this.now);
    // A trailers-only response (gRPC) or a gRPC-Web error carries the status in the headers.
    const grpcStatus = parseStatus(headerText(headers['grpc-status']));
    if (grpcStatus !== undefined) this.call.grpcStatus = grpcStatus;
    if (this.call.protocol === 'connect' && !this.call.framed && status !== 200) this.errorBody = [];
  }

  responseData(chunk: Buffer): void {
    this.call.responseBytes += chunk.length;
    if (this.responseCounter) {
      this.responseCounter.push(chunk);
      const messages = this.responseCounter.messages;
      // The first whole response message: its time, once (a chunk that completes several counts as the first's).
      if (this.call.responseMessages === 0 && messages > 0) this.call.firstResponseMessageTime = this.now();
      this.call.responseMessages = messages;
    }
    this.call.trpc?.responseData(chunk);
    if (this.errorBody && this.errorBodyBytes < MAX_ERROR_BODY) {
      this.errorBody.push(chunk);
      this.errorBodyBytes += chunk.length;
    }
  }

  responseTrailers(trailers: Headers): void {
    const grpcStatus = parseStatus(headerText(trailers['grpc-status']));
    if (grpcStatus !== undefined) this.call.grpcStatus = grpcStatus;
  }

  /** The response body carried its protocol's status frame (gRPC-Web trailers, Connect end-stream). */
  sawEndFrame(): boolean {
    return this.responseCounter?.endFrame !== undefined;
  }

  /** The response body stopped between frames (always so for an unframed body). */
  responseAtBoundary(): boolean {
    return this.responseCounter?.atBoundary ?? true;
  }

  /** Settle what the bytes said, once the call has ended. */
  finish(): void {
    const call = this.call;
    call.trpc?.finish();
    const rc = this.responseCounter;
    if (rc) {
      if (rc.endFrame && rc.endFrameKind === 'grpc_web_trailers') {
        const s = grpcStatusFromTrailerFrame(rc.endFrame);
        if (s !== undefined) call.grpcStatus = s;
      } else if (rc.endFrame && rc.endFrameKind === 'connect_end_stream') {
        call.connectEndStream = true;
        const code = connectErrorCode(rc.endFrame, true);
        call.connectCode = code === null ? 'unknown' : code;
      }
    }
    if (this.errorBody && this.errorBodyBytes <= MAX_ERROR_BODY) {
      const code = connectErrorCode(Buffer.concat(this.errorBody), false);
      if (typeof code === 'string') call.connectCode = code;
    }
  }
}
