// One caller per protocol the traffic generator speaks. Each turns a Scenario
// into one call and reports its outcome as the gRPC code name the caller saw,
// never throwing, so the generator can count outcomes the way the sidecar
// labels them.
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { ConnectError, createClient } from '@connectrpc/connect';
import type { CallOptions, Transport } from '@connectrpc/connect';
import { OrderService } from './gen/order/v1/order_pb.ts';
import { grpcCodeName } from './grpc-code-names.ts';
import type { GrpcCodeName } from './grpc-code-names.ts';
import { codeFromHttpStatus } from './grpc-http-status.ts';
import { loadGrpcJsService } from './grpc-js-loader.ts';
import { ORDER_PROTO } from './proto-files.ts';
import type { Scenario } from './traffic-scenarios.ts';

export type OrderCaller = {
  call(scenario: Scenario, signal: AbortSignal): Promise<GrpcCodeName>;
  close(): void;
};

/** Connect, gRPC or gRPC-Web, by the connect-node transport given. */
export function connectCaller(transport: Transport, close: () => void): OrderCaller {
  const client = createClient(OrderService, transport);
  return {
    async call({ call, deadlineMs, headers }, signal) {
      const options: CallOptions = { timeoutMs: deadlineMs, headers, signal };
      try {
        switch (call.kind) {
          case 'get':
            await client.getOrder({ id: call.id }, options);
            break;
          case 'list':
            await client.listOrders({ customer: call.customer, pageSize: call.pageSize }, options);
            break;
          case 'create':
            await client.createOrder({ customer: call.customer, items: call.items.map((i) => ({ ...i, unitPriceCents: BigInt(i.unitPriceCents) })) }, options);
            break;
          case 'watch':
            for await (const _event of client.watchOrders({ maxEvents: call.maxEvents }, options)) {
              // Only the stream's end matters here.
            }
            break;
        }
        return 'OK';
      } catch (err) {
        return grpcCodeName(ConnectError.from(err).code);
      }
    },
    close,
  };
}

type Callback = (err: grpc.ServiceError | null) => void;
type GrpcJsOrderClient = grpc.Client & {
  GetOrder(req: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback): grpc.ClientUnaryCall;
  ListOrders(req: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback): grpc.ClientUnaryCall;
  CreateOrder(req: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback): grpc.ClientUnaryCall;
  WatchOrders(req: object, metadata: grpc.Metadata, options: grpc.CallOptions): grpc.ClientReadableStream<unknown>;
};

let orderClientConstructor: grpc.ServiceClientConstructor | undefined;

/** gRPC through @grpc/grpc-js: a second gRPC client stack, with its own HTTP/2 and deadline handling. */
export function grpcJsCaller(target: URL): OrderCaller {
  orderClientConstructor ??= loadGrpcJsService(ORDER_PROTO, 'order.v1.OrderService');
  const client = new orderClientConstructor(target.host, grpc.credentials.createInsecure()) as unknown as GrpcJsOrderClient;
  return {
    call({ call, deadlineMs, headers }, signal) {
      const metadata = new grpc.Metadata();
      for (const [name, value] of Object.entries(headers ?? {})) metadata.set(name, value);
      const options: grpc.CallOptions = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
      return new Promise((resolve) => {
        const done = (err: grpc.ServiceError | null) => resolve(err ? grpcCodeName(err.code) : 'OK');
        let pending: grpc.ClientUnaryCall | grpc.ClientReadableStream<unknown>;
        switch (call.kind) {
          case 'get':
            pending = client.GetOrder({ id: call.id }, metadata, options, done);
            break;
          case 'list':
            pending = client.ListOrders({ customer: call.customer, pageSize: call.pageSize }, metadata, options, done);
            break;
          case 'create':
            pending = client.CreateOrder({ customer: call.customer, items: call.items }, metadata, options, done);
            break;
          case 'watch': {
            const stream = client.WatchOrders({ maxEvents: call.maxEvents }, metadata, options);
            stream.on('data', () => {});
            stream.on('error', (err: grpc.ServiceError) => done(err));
            stream.on('end', () => done(null));
            pending = stream;
            break;
          }
        }
        signal.addEventListener('abort', () => pending.cancel(), { once: true });
      });
    },
    close: () => client.close(),
  };
}

/**
 * REST by the google.api.http routes, over node:http keep-alive connections as
 * a typical REST client pools them. REST has no deadline header: the caller
 * enforces its own by giving up, which the server sees as a closed connection.
 * WatchOrders has no route, so a REST client polls the list instead.
 */
export function restCaller(target: URL, agent: http.Agent): OrderCaller {
  return {
    async call({ call, deadlineMs, headers }, signal) {
      let method = 'GET';
      let path: string;
      let body: string | undefined;
      switch (call.kind) {
        case 'get':
          path = `/v1/orders/${encodeURIComponent(call.id)}`;
          break;
        case 'list':
          path = `/v1/orders?page_size=${call.pageSize}&customer=${encodeURIComponent(call.customer)}`;
          break;
        case 'watch':
          path = `/v1/orders?page_size=${call.maxEvents}`;
          break;
        case 'create':
          method = 'POST';
          path = '/v1/orders';
          body = JSON.stringify({ customer: call.customer, items: call.items.map((i) => ({ ...i, unitPriceCents: String(i.unitPriceCents) })) });
          break;
      }
      const deadline = deadlineMs === undefined ? undefined : AbortSignal.timeout(deadlineMs);
      const callSignal = deadline ? AbortSignal.any([signal, deadline]) : signal;
      try {
        const status = await restRequest(new URL(path, target), method, { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body, agent, callSignal);
        return codeFromHttpStatus(status);
      } catch {
        if (deadline?.aborted) return 'DEADLINE_EXCEEDED';
        return signal.aborted ? 'CANCELLED' : 'UNAVAILABLE';
      }
    },
    close: () => agent.destroy(),
  };
}

function restRequest(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: string | undefined,
  agent: http.Agent,
  signal: AbortSignal,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent, signal }, (res) => {
      res.on('error', reject);
      // Read the body through, so the keep-alive connection goes back to the pool.
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}
