import { setMaxListeners } from 'node:events';
import { Code, ConnectError } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { OrderService } from './gen/order/v1/order_pb.ts';
import { listenH2c } from './h2c-listener.ts';
import type { HttpRequest, HttpResponse } from './h2c-listener.ts';
import { orderConnectService } from './order-connect-service.ts';
import { OrderOperations, type OrderVersion } from './order-operations.ts';
import { handleOrderRest } from './order-rest-routes.ts';
import { OrderStore } from './order-store.ts';
import { orderTrpcHandler } from './order-trpc-router.ts';
import { DEFAULT_HOST, upstreamUrl } from './upstream.ts';
import type { ListenOptions, Upstream } from './upstream.ts';

export type OrderServiceOptions = ListenOptions & {
  /** Sent in an `x-pod` response header on every response, so a test or the demo can tell which replica answered. */
  podName?: string;
  /** Multiplies the simulated service times (a few ms each); 0 turns them off. Default 1. */
  latencyScale?: number;
  /** Orders present at start, ids `ord-000001`...; default 24. */
  seedOrders?: number;
  /** How many of the seeded orders carry every field (the 18-field order, about 1.2 kB as JSON); default 0. */
  fullOrders?: number;
  /** The orders' database, shared by every instance given it (replicas of one service, or a new version beside them); default a store of its own. */
  store?: OrderStore;
  /** `v2`: the successor, which differs in one visible way (see OrderVersion). Default `v1`. */
  version?: OrderVersion;
};

/**
 * OrderService over Connect, gRPC and gRPC-Web, over REST by its
 * google.api.http rules, and over tRPC under /trpc (order.getOrder, …), on one
 * port for HTTP/1.1 and h2c, with in-memory orders.
 */
export async function startOrderService(opts: OrderServiceOptions = {}): Promise<Upstream> {
  const host = opts.host ?? DEFAULT_HOST;
  const shutdown = new AbortController();
  // connect-node adds a listener to this signal per call in flight: many calls at once are normal here.
  setMaxListeners(0, shutdown.signal);
  const store = opts.store ?? new OrderStore(opts.seedOrders ?? 24, opts.fullOrders ?? 0);
  const ops = new OrderOperations(store, opts.latencyScale ?? 1, opts.version);
  const trpc = orderTrpcHandler(ops, shutdown.signal);
  const rpc = connectNodeAdapter({
    routes: (router) => router.service(OrderService, orderConnectService(ops, store)),
    shutdownSignal: shutdown.signal,
  });
  const podName = opts.podName;
  const server = await listenH2c({
    host,
    port: opts.port ?? 0,
    onRequest: (req: HttpRequest, res: HttpResponse) => {
      // Set before dispatch: writeHead, which both handlers call, merges headers set here.
      if (podName !== undefined) res.setHeader('x-pod', podName);
      if (!handleOrderRest(req, res, ops, shutdown.signal) && !trpc(req, res)) rpc(req, res);
    },
  });
  return {
    host,
    port: server.port,
    url: upstreamUrl(host, server.port),
    async close() {
      shutdown.abort(new ConnectError('server closing', Code.Unavailable));
      await server.close();
    },
  };
}
