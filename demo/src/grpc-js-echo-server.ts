import type { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { REQUESTED_FAILURE, requestedFailure, responsePayload, serverStreamCount } from './echo-behaviour.ts';
import { echoServiceDefinition } from './grpc-js-echo-loader.ts';
import type { EchoRequestObject, EchoResponseObject } from './grpc-js-echo-loader.ts';
import { sleep } from './sleep.ts';
import { DEFAULT_HOST, upstreamUrl } from './upstream.ts';
import type { ListenOptions, Upstream } from './upstream.ts';

type Failure = Partial<grpc.StatusObject>;

function failure(req: EchoRequestObject): Failure | undefined {
  const code = requestedFailure(req);
  return code === undefined ? undefined : { code, details: REQUESTED_FAILURE };
}

function answer(req: EchoRequestObject, index: number): EchoResponseObject {
  return { message: req.message, index, payload: Buffer.from(responsePayload(req)) };
}

/** Aborts when the client cancels (reset, deadline) or the server shuts down. */
function callSignal(call: EventEmitter, shutdown: AbortSignal): AbortSignal {
  const cancelled = new AbortController();
  call.once('cancelled', () => cancelled.abort(new Error('call cancelled')));
  return AbortSignal.any([cancelled.signal, shutdown]);
}

function implementation(shutdown: AbortSignal): grpc.UntypedServiceImplementation {
  return {
    async Echo(
      call: grpc.ServerUnaryCall<EchoRequestObject, EchoResponseObject>,
      callback: grpc.sendUnaryData<EchoResponseObject>,
    ) {
      const req = call.request;
      try {
        await sleep(req.delayMs, callSignal(call, shutdown));
      } catch {
        callback({ code: grpc.status.CANCELLED, details: 'call ended before its answer' });
        return;
      }
      const failed = failure(req);
      if (failed) callback(failed);
      else callback(null, answer(req, 0));
    },

    async ServerStream(call: grpc.ServerWritableStream<EchoRequestObject, EchoResponseObject>) {
      const req = call.request;
      const signal = callSignal(call, shutdown);
      try {
        const count = serverStreamCount(req);
        for (let i = 0; i < count; i++) {
          await sleep(req.delayMs, signal);
          call.write(answer(req, i));
        }
      } catch {
        call.emit('error', { code: grpc.status.CANCELLED, details: 'call ended before its answer' });
        return;
      }
      const failed = failure(req);
      if (failed) call.emit('error', failed);
      else call.end();
    },

    async ClientStream(
      call: grpc.ServerReadableStream<EchoRequestObject, EchoResponseObject>,
      callback: grpc.sendUnaryData<EchoResponseObject>,
    ) {
      const signal = callSignal(call, shutdown);
      const messages: string[] = [];
      let last: EchoRequestObject | undefined;
      try {
        for await (const req of call as AsyncIterable<EchoRequestObject>) {
          await sleep(req.delayMs, signal);
          const failed = failure(req);
          if (failed) {
            callback(failed);
            return;
          }
          messages.push(req.message);
          last = req;
        }
      } catch {
        callback({ code: grpc.status.CANCELLED, details: 'call ended before its answer' });
        return;
      }
      callback(null, {
        message: messages.join(','),
        index: messages.length,
        payload: Buffer.from(last ? responsePayload({ payload: Buffer.alloc(0), responseSize: last.responseSize }) : []),
      });
    },

    async BidiStream(call: grpc.ServerDuplexStream<EchoRequestObject, EchoResponseObject>) {
      const signal = callSignal(call, shutdown);
      let index = 0;
      let failed: Failure | undefined;
      try {
        // A plain for-await destroys the duplex when the requests end, and a
        // destroyed duplex can no longer send its status.
        for await (const req of call.iterator({ destroyOnReturn: false }) as AsyncIterable<EchoRequestObject>) {
          await sleep(req.delayMs, signal);
          failed = failure(req);
          if (failed) break;
          call.write(answer(req, index++));
        }
      } catch {
        failed = { code: grpc.status.CANCELLED, details: 'call ended before its answer' };
      }
      // Emitted only once the iterator is done: an 'error' it sees would make it destroy the duplex too.
      if (failed) call.emit('error', failed);
      else call.end();
    },
  };
}

/**
 * The same EchoService on a @grpc/grpc-js Server (h2c, insecure): a second,
 * independent implementation, so the sidecar's tests do not lean on one
 * server's quirks. gRPC only; no REST routes.
 */
export async function startGrpcJsEcho(opts: ListenOptions = {}): Promise<Upstream> {
  const host = opts.host ?? DEFAULT_HOST;
  const shutdown = new AbortController();
  const server = new grpc.Server();
  server.addService(echoServiceDefinition, implementation(shutdown.signal));
  const port = await new Promise<number>((resolve, reject) => {
    const target = `${host.includes(':') ? `[${host}]` : host}:${opts.port ?? 0}`;
    server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    host,
    port,
    url: upstreamUrl(host, port),
    async close() {
      shutdown.abort(new Error('server closing'));
      // forceShutdown cancels every call and destroys every session, where
      // tryShutdown would wait for open streams to finish.
      server.forceShutdown();
    },
  };
}
