// A gRPC client at the frame level (node:http2), for what grpc-js hides: when
// the server's GOAWAY arrived on the connection, and how each call that was in
// flight on that connection at that moment ended.
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';
import { create, toBinary } from '@bufbuild/protobuf';
import { DELAY_HEADER, OrderService } from '@rpcscope/demo';

const GET_ORDER = OrderService.method.getOrder;
const GET_ORDER_PATH = `/${OrderService.typeName}/${GET_ORDER.name}`;

export interface ProbeCall {
  /** ms since the connection opened. */
  startedMs: number;
  endedMs: number;
  /** `grpc-status` from the trailers (or a trailers-only answer); undefined when the stream ended without one. */
  grpcStatus: number | undefined;
  /** The stream's reset code, when it was reset. */
  rstCode: number | undefined;
  pod: string;
}

export interface H2Probe {
  /** ms since the connection opened when the server's GOAWAY arrived; undefined until then. */
  goawayMs(): number | undefined;
  goawayCode(): number | undefined;
  /** One GetOrder call on this connection, taking at least `delayMs` at the server. */
  getOrder(id: string, delayMs: number): Promise<ProbeCall>;
  /** Resolves when the connection has closed. */
  closed: Promise<void>;
  close(): void;
}

/** The gRPC message framing: a 0 compression flag, a 4-byte length, the message. */
function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

export async function openH2Probe(url: string): Promise<H2Probe> {
  const session = http2.connect(url);
  session.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    session.once('connect', () => resolve());
    session.once('error', reject);
  });
  const opened = performance.now();
  const since = (): number => Math.round(performance.now() - opened);
  let goawayAt: number | undefined;
  let goawayCode: number | undefined;
  session.on('goaway', (code) => {
    goawayAt ??= since();
    goawayCode ??= code;
  });
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  return {
    goawayMs: () => goawayAt,
    goawayCode: () => goawayCode,
    getOrder(id, delayMs) {
      const startedMs = since();
      return new Promise((resolve) => {
        let grpcStatus: number | undefined;
        let pod = '';
        const stream = session.request({
          ':method': 'POST',
          ':path': GET_ORDER_PATH,
          'content-type': 'application/grpc',
          te: 'trailers',
          [DELAY_HEADER]: String(delayMs),
        });
        const status = (headers: http2.IncomingHttpHeaders): void => {
          const s = headers['grpc-status'];
          if (s !== undefined) grpcStatus = Number(s);
        };
        stream.on('response', (headers) => {
          pod = String(headers['x-pod'] ?? '');
          status(headers);
        });
        stream.on('trailers', status);
        stream.on('error', () => {});
        stream.resume();
        stream.on('close', () => resolve({ startedMs, endedMs: since(), grpcStatus, rstCode: stream.rstCode === 0 ? undefined : stream.rstCode, pod }));
        stream.end(frame(toBinary(GET_ORDER.input, create(GET_ORDER.input, { id }))));
      });
    },
    closed,
    close: () => session.close(),
  };
}
