// A forwarder's event callbacks run long after the listener's try/catch has
// returned: the upstream's response, its data, its close, the caller's trailers.
// An exception thrown in one of them would reach the process as uncaught and end
// every call the sidecar carries. Each forwarder therefore registers its
// callbacks through the call's guard, which contains a throw as the listener
// contains a synchronous one: counted in rpcscope_internal_errors_total at the
// forwarder's site, logged, and this call alone abandoned (the forwarder's own
// way: RST_STREAM INTERNAL_ERROR, an HTTP 500, or a cut connection).
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Faults, FaultSite } from '../call/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';

export class CallGuard {
  /** The call was abandoned for a fault: its other callbacks leave the answer as it is. */
  abandoned = false;

  constructor(
    private readonly faults: Faults,
    private readonly site: FaultSite,
    private readonly abandon: () => void,
  ) {}

  /** `fn` as a listener whose throw ends this call only. */
  wrap<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void {
    return (...args: A): void => {
      try {
        fn(...args);
      } catch (err) {
        this.fault(err);
      }
    };
  }

  /** A fault in this call: counted each time, the call abandoned once. */
  fault(err: unknown): void {
    this.faults.internalError(this.site, err);
    if (this.abandoned) return;
    this.abandoned = true;
    try {
      this.abandon();
    } catch {
      // Already counted; whatever is left of the call closes with its sockets.
    }
  }
}

/**
 * The caller's answer to a call the sidecar failed itself: HTTP 500 when the
 * response has not begun (the connection then closes), else the connection cut,
 * the one way HTTP/1.1 has to say a response is not whole.
 */
export function abandonH1(res: http.ServerResponse): void {
  if (res.headersSent || res.destroyed) return void res.destroy();
  res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('rpcscope: internal error\n');
}

/** The caller's HTTP/2 stream reset INTERNAL_ERROR, which a gRPC caller reads as status INTERNAL. */
export function abandonH2(stream: http2.ServerHttp2Stream): void {
  if (!stream.destroyed) stream.close(Http2Error.INTERNAL_ERROR);
}
