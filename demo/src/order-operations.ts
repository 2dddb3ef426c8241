// The order service's operations, free of any one protocol: the Connect
// router (Connect, gRPC, gRPC-Web) and the REST routes of the google.api.http
// rules both call these, so every protocol gives the same answers and errors.
import { Code, ConnectError } from '@connectrpc/connect';
import { OrderStatus, type CreateOrderRequest, type GetOrderRequest, type ListOrdersRequest, type Order } from './gen/order/v1/order_pb.ts';
import { REQUESTED_FAILURE, requestedFailure } from './echo-behaviour.ts';
import type { OrderStore } from './order-store.ts';
import { sleep } from './sleep.ts';

/**
 * Request headers (gRPC metadata) that let a caller ask any protocol for a slow
 * or failed call, the way EchoRequest's delay_ms and fail_code do for echo.
 */
export const DELAY_HEADER = 'x-delay-ms';
export const FAIL_CODE_HEADER = 'x-fail-code';
/** A create repeated with the same key (a retry, a mirrored call) answers the order the first one made. */
export const IDEMPOTENCY_HEADER = 'idempotency-key';

const MAX_DELAY_MS = 60_000;
const DEFAULT_PAGE_SIZE = 20;
/** Large enough for the 1,000-order list (about 215 kB as JSON, oldest first: the 24 full orders and 976 compact ones) the gRPC-versus-REST comparisons use. */
const MAX_PAGE_SIZE = 1000;

export type CallInfo = {
  signal: AbortSignal;
  /** Reads one request header (lower-case name). */
  header(name: string): string | undefined;
};

/** Typical service time of each operation: base ms plus up to jitter ms, with an occasional slow tail. */
const LATENCY = {
  get: { base: 2, jitter: 4 },
  list: { base: 5, jitter: 12 },
  create: { base: 8, jitter: 20 },
} as const;

/** One call in this many takes ten times as long, so latency histograms have a tail to show. */
const TAIL_ONE_IN = 50;

/**
 * Which implementation answers: `v1` the one in service; `v2` its successor,
 * the same but for one small difference a shadow comparison should find: its
 * GetOrder gives shipped orders' carrier by the new carrier code.
 */
export type OrderVersion = 'v1' | 'v2';
const V2_CARRIER_CODES: Record<string, string> = { 'united-parcel-ground': 'ups-ground' };

export class OrderOperations {
  constructor(
    private readonly store: OrderStore,
    /** Multiplies the simulated service times; 0 turns them off (tests). */
    private readonly latencyScale: number,
    private readonly version: OrderVersion = 'v1',
  ) {}

  async getOrder(req: GetOrderRequest, call: CallInfo): Promise<Order> {
    await this.serve('get', call);
    if (req.id === '') throw new ConnectError('id is required', Code.InvalidArgument);
    const order = this.store.get(req.id);
    if (!order) throw new ConnectError(`order ${req.id} not found`, Code.NotFound);
    if (this.version === 'v2' && order.status === OrderStatus.SHIPPED && V2_CARRIER_CODES[order.carrier] !== undefined) {
      return { ...order, carrier: V2_CARRIER_CODES[order.carrier]! };
    }
    return order;
  }

  async listOrders(req: ListOrdersRequest, call: CallInfo): Promise<Order[]> {
    await this.serve('list', call);
    if (req.pageSize < 0) throw new ConnectError('page_size must not be negative', Code.InvalidArgument);
    const limit = Math.min(MAX_PAGE_SIZE, req.pageSize === 0 ? DEFAULT_PAGE_SIZE : req.pageSize);
    return this.store.list(req.customer, limit);
  }

  async createOrder(req: CreateOrderRequest, call: CallInfo): Promise<Order> {
    await this.serve('create', call);
    if (req.customer === '') throw new ConnectError('customer is required', Code.InvalidArgument);
    if (req.items.length === 0) throw new ConnectError('an order needs at least one item', Code.InvalidArgument);
    for (const item of req.items) {
      if (item.sku === '' || item.quantity <= 0 || item.unitPriceCents < 0n) {
        throw new ConnectError('every item needs a sku, a positive quantity and a price of 0 or more', Code.InvalidArgument);
      }
    }
    return this.store.create(req.customer, req.items, call.header(IDEMPOTENCY_HEADER));
  }

  /** Waits the simulated service time plus any requested delay, then fails if the caller asked for it. */
  private async serve(kind: keyof typeof LATENCY, call: CallInfo): Promise<void> {
    const { base, jitter } = LATENCY[kind];
    let ms = (base + Math.random() * jitter) * this.latencyScale;
    if (Math.random() * TAIL_ONE_IN < 1) ms *= 10;
    const requested = Number(call.header(DELAY_HEADER) ?? 0);
    if (Number.isFinite(requested) && requested > 0) ms += Math.min(requested, MAX_DELAY_MS);
    await sleep(Math.round(ms), call.signal);
    const code = requestedFailure({ failCode: Number(call.header(FAIL_CODE_HEADER) ?? 0) || 0 });
    if (code !== undefined) throw new ConnectError(REQUESTED_FAILURE, code as Code);
  }
}
