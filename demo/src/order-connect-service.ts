import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { ListOrdersResponseSchema, OrderEvent_Kind, OrderEventSchema } from './gen/order/v1/order_pb.ts';
import type { Order, OrderEvent, OrderService, WatchOrdersRequest } from './gen/order/v1/order_pb.ts';
import type { CallInfo, OrderOperations } from './order-operations.ts';
import type { OrderStore } from './order-store.ts';

function callInfo(ctx: HandlerContext): CallInfo {
  return { signal: ctx.signal, header: (name) => ctx.requestHeader.get(name) ?? undefined };
}

export function orderConnectService(ops: OrderOperations, store: OrderStore): ServiceImpl<typeof OrderService> {
  return {
    getOrder: (req, ctx) => ops.getOrder(req, callInfo(ctx)),
    listOrders: async (req, ctx) => create(ListOrdersResponseSchema, { orders: await ops.listOrders(req, callInfo(ctx)) }),
    createOrder: (req, ctx) => ops.createOrder(req, callInfo(ctx)),
    watchOrders: (req, ctx) => watch(store, req, ctx.signal),
  };
}

/** Replays the existing orders, then follows new ones until max_events or the end of the call. */
async function* watch(store: OrderStore, req: WatchOrdersRequest, signal: AbortSignal): AsyncGenerator<OrderEvent> {
  const limit = req.maxEvents > 0 ? req.maxEvents : Infinity;
  const matches = (order: Order) => req.customer === '' || order.customer === req.customer;
  // Subscribe before the replay, so an order created during it is not missed.
  const pending: Order[] = [];
  let wake: (() => void) | undefined;
  const unsubscribe = store.onCreated((order) => {
    if (!matches(order)) return;
    pending.push(order);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    let sent = 0;
    for (const order of store.existing(req.customer)) {
      if (sent >= limit || signal.aborted) return;
      yield create(OrderEventSchema, { kind: OrderEvent_Kind.EXISTING, order });
      sent++;
    }
    while (sent < limit && !signal.aborted) {
      const order = pending.shift();
      if (order) {
        yield create(OrderEventSchema, { kind: OrderEvent_Kind.CREATED, order });
        sent++;
        continue;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    unsubscribe();
    signal.removeEventListener('abort', onAbort);
  }
}
