// The tRPC face of OrderService: the same operations as the RPC and REST
// routes, as procedures `order.getOrder`, `order.listOrders` (queries) and
// `order.createOrder` (a mutation), so an operations file can map each onto
// its gRPC and REST twins. Orders travel in the proto3 JSON mapping, as over
// REST (int64 as strings: plain JSON cannot carry a bigint).
import http2 from 'node:http2';
import type http from 'node:http';
import { create, toJson, type JsonValue } from '@bufbuild/protobuf';
import { ConnectError } from '@connectrpc/connect';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTP2Handler, createHTTPHandler } from '@trpc/server/adapters/standalone';
import { CreateOrderRequestSchema, GetOrderRequestSchema, LineItemSchema, ListOrdersRequestSchema, OrderSchema } from './gen/order/v1/order_pb.ts';
import type { HttpRequest, HttpResponse } from './h2c-listener.ts';
import type { CallInfo, OrderOperations } from './order-operations.ts';
import { trpcCodeOf } from './trpc-codes.ts';

/** Where the procedures are served: the sidecar's default `--trpc-prefix`. */
export const TRPC_PREFIX = '/trpc';

type Context = { call: CallInfo };

const t = initTRPC.context<Context>().create();

function record(v: unknown): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TRPCError({ code: 'BAD_REQUEST', message: 'input must be an object' });
  return v as Record<string, unknown>;
}
const str = (v: unknown, name: string): string => {
  if (v === undefined) return '';
  if (typeof v !== 'string') throw new TRPCError({ code: 'BAD_REQUEST', message: `${name} must be a string` });
  return v;
};
const int = (v: unknown, name: string): number => {
  if (v === undefined) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TRPCError({ code: 'BAD_REQUEST', message: `${name} must be an integer` });
  return v;
};

export type TrpcLineItem = { sku: string; quantity: number; unitPriceCents: string };

const getInput = (v: unknown) => ({ id: str(record(v).id, 'id') });
const listInput = (v: unknown) => {
  const r = record(v ?? {});
  return { pageSize: int(r.pageSize, 'pageSize'), customer: str(r.customer, 'customer') };
};
const createInput = (v: unknown) => {
  const r = record(v);
  if (!Array.isArray(r.items)) throw new TRPCError({ code: 'BAD_REQUEST', message: 'items must be a list' });
  const items = r.items.map((i, n): TrpcLineItem => {
    const item = record(i);
    return { sku: str(item.sku, `items[${n}].sku`), quantity: int(item.quantity, `items[${n}].quantity`), unitPriceCents: str(item.unitPriceCents, `items[${n}].unitPriceCents`) || '0' };
  });
  return { customer: str(r.customer, 'customer'), items };
};

/** A failed operation as the tRPC error closest in meaning. */
async function answer<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const e = ConnectError.from(err);
    throw new TRPCError({ code: trpcCodeOf(e.code), message: e.rawMessage, cause: e });
  }
}

export function orderTrpcRouter(ops: OrderOperations) {
  return t.router({
    order: t.router({
      getOrder: t.procedure.input(getInput).query(({ input, ctx }) => answer(async () => toJson(OrderSchema, await ops.getOrder(create(GetOrderRequestSchema, input), ctx.call)) as JsonValue)),
      listOrders: t.procedure
        .input(listInput)
        .query(({ input, ctx }) => answer(async () => (await ops.listOrders(create(ListOrdersRequestSchema, input), ctx.call)).map((o) => toJson(OrderSchema, o)) as JsonValue)),
      createOrder: t.procedure.input(createInput).mutation(({ input, ctx }) =>
        answer(async () => {
          let items;
          try {
            items = input.items.map((i) => create(LineItemSchema, { sku: i.sku, quantity: i.quantity, unitPriceCents: BigInt(i.unitPriceCents) }));
          } catch {
            throw new TRPCError({ code: 'BAD_REQUEST', message: 'unitPriceCents must be an integer string' });
          }
          return toJson(OrderSchema, await ops.createOrder(create(CreateOrderRequestSchema, { customer: input.customer, items }), ctx.call)) as JsonValue;
        }),
      ),
    }),
  });
}

export type OrderTrpcRouter = ReturnType<typeof orderTrpcRouter>;

function callInfo(req: HttpRequest, res: HttpResponse, shutdown: AbortSignal): CallInfo {
  const gone = new AbortController();
  res.once('close', () => gone.abort());
  return {
    signal: AbortSignal.any([gone.signal, shutdown]),
    header: (name) => {
      const value = req.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
  };
}

/** The standalone adapter's handlers, HTTP/1.1 and HTTP/2, for requests under TRPC_PREFIX. */
export function orderTrpcHandler(ops: OrderOperations, shutdown: AbortSignal): (req: HttpRequest, res: HttpResponse) => boolean {
  const router = orderTrpcRouter(ops);
  const h1 = createHTTPHandler({ router, basePath: `${TRPC_PREFIX}/`, createContext: ({ req, res }) => ({ call: callInfo(req, res, shutdown) }) });
  const h2 = createHTTP2Handler({ router, basePath: `${TRPC_PREFIX}/`, createContext: ({ req, res }) => ({ call: callInfo(req, res, shutdown) }) });
  return (req, res) => {
    if (!(req.url ?? '').startsWith(`${TRPC_PREFIX}/`)) return false;
    if (req instanceof http2.Http2ServerRequest) h2(req, res as http2.Http2ServerResponse);
    else h1(req as http.IncomingMessage, res as http.ServerResponse);
    return true;
  };
}
