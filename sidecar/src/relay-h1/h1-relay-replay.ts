// The copy of a relayed HTTP/1.1 request kept so that it can be sent again when
// it meets the app closing a reused keep-alive connection (the keep-alive race):
// the app's idle timeout closed the connection just as, or before, the request
// was written, and nothing of an answer came. RFC 9112 §9.3.1 lets a client send
// such a request again on a new connection when its method is idempotent (RFC
// 9110 §9.2.2); any other may have been acted on, and is answered 502 instead.
//
// The copy is the head as passed to the app and the body bytes as they came (up
// to RETRY_BODY_LIMIT, the bound the HTTP/2 retries hold); it is let go at the
// first byte of an answer, when the body outgrows the bound, and after one retry.
import { RETRY_BODY_LIMIT } from '../upstream/upstream-retries.ts';

/** RFC 9110 §9.2.2: the methods whose intended effect is the same sent once or twice. */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);

export class RequestCopy {
  private parts: Buffer[] | undefined;
  private bodyBytes = 0;

  /** A copy of a request with `method`, starting with its head as sent; none for a method not to be sent twice. */
  static of(method: string, head: Buffer): RequestCopy | undefined {
    return IDEMPOTENT.has(method) ? new RequestCopy(head) : undefined;
  }

  private constructor(head: Buffer) {
    this.parts = [head];
  }

  /** Body bytes as sent: copied while the body stays within the bound, else the copy is dropped. */
  add(chunk: Buffer): void {
    if (!this.parts) return;
    this.bodyBytes += chunk.length;
    // A view of the chunk the socket read: Node gives each read a buffer of its own, so nothing is copied.
    if (this.bodyBytes <= RETRY_BODY_LIMIT) this.parts.push(chunk);
    else this.release();
  }

  /** Whether the request, all of it sent so far, is still held. */
  get whole(): boolean {
    return this.parts !== undefined;
  }

  /** The request as sent so far, once: the copy is let go (a request is sent again at most once). */
  take(): Buffer[] {
    const parts = this.parts ?? [];
    this.release();
    return parts;
  }

  release(): void {
    this.parts = undefined;
    this.bodyBytes = 0;
  }
}
