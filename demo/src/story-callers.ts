// The clients of the demo's story, one per protocol, each reporting what it saw
// of one call: the gRPC code name and the pod that answered (`x-pod`).
// Connect and gRPC-Web go over HTTP/1.1, as browsers and their proxies send
// them, REST over a pool of keep-alive connections; only gRPC holds one
// long-lived HTTP/2 connection, which is what pins it to one pod behind a
// connection-level balancer. tRPC goes as a web app's browser sends it:
// httpBatchLink, the procedures a page asks for at once in one request.
import http from 'node:http';
import { ConnectError, createClient, type CallOptions, type Client, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from '@connectrpc/connect-node';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { OrderService } from './gen/order/v1/order_pb.ts';
import { grpcCodeName, type GrpcCodeName } from './grpc-code-names.ts';
import { codeFromHttpStatus } from './grpc-http-status.ts';
import { TRPC_PREFIX, type OrderTrpcRouter } from './order-trpc-router.ts';
import { grpcCodeFromTrpc } from './trpc-codes.ts';

/** The storefront's protocols, which its migration moves between. */
export type StorefrontProtocol = 'rest' | 'grpc' | 'connect' | 'grpc_web';
/** The sidecar's `protocol` label values. */
export type StoryProtocol = StorefrontProtocol | 'trpc';
/** Protocols whose calls carry a deadline header the sidecar reads. */
export const GRPC_FAMILY: readonly StoryProtocol[] = ['grpc', 'connect', 'grpc_web'];
export type StoryOperation = 'GetOrder' | 'ListOrders' | 'CreateOrder' | 'WatchOrders';

export interface StoryCall {
  operation: StoryOperation;
  /** GetOrder's id; ListOrders' page size; WatchOrders' time before the client cancels it. */
  id?: string;
  pageSize?: number;
  cancelAfterMs?: number;
  /** The caller's deadline; undefined sends none. */
  deadlineMs?: number;
  headers?: Record<string, string>;
}

export interface CallOutcome {
  code: GrpcCodeName;
  /** `x-pod` of the answer; empty when no answer came. */
  pod: string;
}

export interface StoryCaller {
  call(c: StoryCall, signal: AbortSignal): Promise<CallOutcome>;
  close(): void;
}

// No client asks for compressed answers (connect-node would ask for gzip by
// default): the comparison is of encodings, JSON against protobuf, as the
// usual gRPC-versus-REST comparisons make it.

/** Connections a pooled HTTP/1.1 client spreads its calls over. */
const HTTP1_CONNECTIONS = 6;

function agents(): http.Agent[] {
  return Array.from({ length: HTTP1_CONNECTIONS }, () => new http.Agent({ keepAlive: true, maxSockets: 2 }));
}

/** Calls over connect-node clients, a new one per call in turn (one per pooled HTTP/1.1 agent). */
function rpcCaller(clients: Array<Client<typeof OrderService>>, close: () => void): StoryCaller {
  let next = 0;
  return {
    async call(c, signal) {
      const client = clients[next++ % clients.length]!;
      let pod = '';
      const options: CallOptions = { signal, headers: c.headers, onHeader: (h) => (pod ||= h.get('x-pod') ?? '') };
      if (c.deadlineMs !== undefined) options.timeoutMs = c.deadlineMs;
      try {
        switch (c.operation) {
          case 'GetOrder':
            await client.getOrder({ id: c.id ?? '' }, options);
            break;
          case 'ListOrders':
            await client.listOrders({ pageSize: c.pageSize ?? 0 }, options);
            break;
          case 'CreateOrder':
            await client.createOrder({ customer: 'acme', items: [{ sku: 'sku-cable', quantity: 2, unitPriceCents: 499n }] }, options);
            break;
          case 'WatchOrders': {
            // A watcher that leaves: the client cancels its stream, an RST_STREAM CANCEL on HTTP/2.
            const leave = new AbortController();
            const timer = setTimeout(() => leave.abort(), c.cancelAfterMs ?? 500);
            try {
              for await (const _event of client.watchOrders({ maxEvents: 0 }, { ...options, signal: AbortSignal.any([signal, leave.signal]) })) {
                // Only the stream's end matters.
              }
            } catch (err) {
              if (!leave.signal.aborted) throw err;
            } finally {
              clearTimeout(timer);
            }
            return { code: 'CANCELLED', pod };
          }
        }
        return { code: 'OK', pod };
      } catch (err) {
        const e = ConnectError.from(err);
        pod ||= e.metadata.get('x-pod') ?? '';
        return { code: grpcCodeName(e.code), pod };
      }
    },
    close,
  };
}

/** gRPC over one HTTP/2 connection, held for the whole run (reconnecting after a GOAWAY), as a typical service holds it. */
export function grpcCaller(baseUrl: string): StoryCaller {
  const sessionManager = new Http2SessionManager(baseUrl);
  return rpcCaller([createClient(OrderService, createGrpcTransport({ baseUrl, sessionManager, acceptCompression: [] }))], () => sessionManager.abort());
}

export function connectCaller(baseUrl: string): StoryCaller {
  const pool = agents();
  const transports: Transport[] = pool.map((agent) => createConnectTransport({ baseUrl, httpVersion: '1.1', useBinaryFormat: false, acceptCompression: [], nodeOptions: { agent } }));
  return rpcCaller(transports.map((t) => createClient(OrderService, t)), () => pool.forEach((a) => a.destroy()));
}

export function grpcWebCaller(baseUrl: string): StoryCaller {
  const pool = agents();
  const transports = pool.map((agent) => createGrpcWebTransport({ baseUrl, httpVersion: '1.1', acceptCompression: [], nodeOptions: { agent } }));
  return rpcCaller(transports.map((t) => createClient(OrderService, t)), () => pool.forEach((a) => a.destroy()));
}

/** REST by the google.api.http routes. REST has no deadline header: the client enforces its own by giving up. */
export function restCaller(baseUrl: string): StoryCaller {
  const pool = agents();
  let next = 0;
  return {
    async call(c, signal) {
      const agent = pool[next++ % pool.length]!;
      let method = 'GET';
      let path: string;
      let body: string | undefined;
      switch (c.operation) {
        case 'GetOrder':
          path = `/v1/orders/${encodeURIComponent(c.id ?? '')}`;
          break;
        case 'ListOrders':
        case 'WatchOrders':
          path = `/v1/orders?page_size=${c.pageSize ?? 20}`;
          break;
        case 'CreateOrder':
          method = 'POST';
          path = '/v1/orders';
          body = JSON.stringify(CREATE);
          break;
      }
      const deadline = c.deadlineMs === undefined ? undefined : AbortSignal.timeout(c.deadlineMs);
      const callSignal = deadline ? AbortSignal.any([signal, deadline]) : signal;
      const headers = { ...c.headers, ...(body ? { 'content-type': 'application/json' } : {}) };
      return new Promise<CallOutcome>((resolve) => {
        let pod = '';
        const req = http.request(new URL(path, baseUrl), { method, headers, agent, signal: callSignal }, (res) => {
          pod = String(res.headers['x-pod'] ?? '');
          res.on('error', () => resolve({ code: deadline?.aborted ? 'DEADLINE_EXCEEDED' : 'CANCELLED', pod }));
          res.resume();
          res.on('end', () => resolve({ code: codeFromHttpStatus(res.statusCode ?? 0), pod }));
        });
        req.on('error', () => resolve({ code: deadline?.aborted ? 'DEADLINE_EXCEEDED' : signal.aborted ? 'CANCELLED' : 'UNAVAILABLE', pod }));
        req.end(body);
      });
    },
    close: () => pool.forEach((a) => a.destroy()),
  };
}

/** The create every client sends: two cables for acme. */
const CREATE = { customer: 'acme', items: [{ sku: 'sku-cable', quantity: 2, unitPriceCents: '499' }] };

export interface TrpcCaller {
  /**
   * The procedures of one page, asked at once: httpBatchLink sends the queries
   * as one batch (`order.getOrder,order.getOrder?batch=1`), a mutation as a
   * request of its own. One outcome per call, in order. tRPC has no deadline
   * header: the client gives up at the page's longest deadline.
   */
  page(calls: readonly StoryCall[], signal: AbortSignal): Promise<CallOutcome[]>;
  close(): void;
}

export function trpcCaller(baseUrl: string): TrpcCaller {
  return {
    async page(calls, signal) {
      const deadlineMs = Math.max(0, ...calls.map((c) => c.deadlineMs ?? 0));
      const deadline = deadlineMs > 0 ? AbortSignal.timeout(deadlineMs) : undefined;
      const callSignal = deadline ? AbortSignal.any([signal, deadline]) : signal;
      let pod = '';
      // A client per page: its fetch sees the batch's answer, whose x-pod is every procedure's.
      const client = createTRPCClient<OrderTrpcRouter>({
        links: [
          httpBatchLink({
            url: `${baseUrl}${TRPC_PREFIX}`,
            headers: () => Object.assign({}, ...calls.map((c) => c.headers ?? {})) as Record<string, string>,
            fetch: async (url, init) => {
              const res = await fetch(url, init);
              pod ||= res.headers.get('x-pod') ?? '';
              return res;
            },
          }),
        ],
      });
      const one = async (c: StoryCall): Promise<CallOutcome> => {
        try {
          switch (c.operation) {
            case 'GetOrder':
              await client.order.getOrder.query({ id: c.id ?? '' }, { signal: callSignal });
              break;
            case 'ListOrders':
            case 'WatchOrders':
              await client.order.listOrders.query({ pageSize: c.pageSize ?? 20, customer: '' }, { signal: callSignal });
              break;
            case 'CreateOrder':
              await client.order.createOrder.mutate(CREATE, { signal: callSignal });
              break;
          }
          return { code: 'OK', pod };
        } catch (err) {
          const code = err instanceof TRPCClientError ? (err.data as { code?: string } | undefined)?.code : undefined;
          if (code !== undefined) return { code: grpcCodeFromTrpc(code), pod };
          return { code: deadline?.aborted ? 'DEADLINE_EXCEEDED' : signal.aborted ? 'CANCELLED' : 'UNAVAILABLE', pod };
        }
      };
      return Promise.all(calls.map(one));
    },
    close: () => {},
  };
}
