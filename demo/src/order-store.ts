import { EventEmitter } from 'node:events';
import { create } from '@bufbuild/protobuf';
import { AddressSchema, LineItemSchema, OrderSchema, OrderStatus } from './gen/order/v1/order_pb.ts';
import type { LineItem, Order } from './gen/order/v1/order_pb.ts';

/** Oldest orders are dropped past this, so a long traffic run keeps memory flat. */
const MAX_ORDERS = 5_000;

const CUSTOMERS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
const SKUS: ReadonlyArray<[string, bigint]> = [
  ['sku-keyboard', 4_999n],
  ['sku-mouse', 1_999n],
  ['sku-monitor', 18_900n],
  ['sku-cable', 499n],
  ['sku-dock', 12_900n],
];
const STATUSES = [OrderStatus.PENDING, OrderStatus.PAID, OrderStatus.SHIPPED, OrderStatus.CANCELLED];

/** In-memory orders, newest last, with a feed of created orders for WatchOrders. */
export class OrderStore {
  private readonly orders = new Map<string, Order>();
  private readonly created = new EventEmitter();
  /** Idempotency key -> the id of the order it created, so a repeated create answers the same order. */
  private readonly byKey = new Map<string, string>();
  private nextId = 1;

  /**
   * Seeds `seed` orders deterministically, so ids `ord-000001`.. exist in every
   * fresh store; the first `full` of them carry every field (about 1.2 kB as
   * JSON), the others are compact (about 190 bytes).
   */
  constructor(seed: number, full = 0) {
    this.created.setMaxListeners(0);
    for (let i = 0; i < seed; i++) {
      const sku = SKUS[i % SKUS.length] ?? SKUS[0]!;
      const items = [create(LineItemSchema, { sku: sku[0], quantity: 1 + (i % 3), unitPriceCents: sku[1] })];
      if (i < full) for (const [name, price] of SKUS.slice(0, 4)) items.push(create(LineItemSchema, { sku: name, quantity: 1, unitPriceCents: price }));
      const order = this.add(CUSTOMERS[i % CUSTOMERS.length] ?? 'acme', items);
      order.status = STATUSES[i % STATUSES.length] ?? OrderStatus.PENDING;
      if (i < full) fillDetails(order, i);
    }
  }

  get(id: string): Order | undefined {
    return this.orders.get(id);
  }

  /**
   * Oldest first, a stable order: a page read twice gives the same orders while
   * new ones are created, so a mirrored read compares equal to its primary.
   */
  list(customer: string, limit: number): Order[] {
    const out: Order[] = [];
    for (const order of this.orders.values()) {
      if (out.length >= limit) break;
      if (customer === '' || order.customer === customer) out.push(order);
    }
    return out;
  }

  /** Oldest first, as a watcher replays them. */
  existing(customer: string): Order[] {
    return [...this.orders.values()].filter((o) => customer === '' || o.customer === customer);
  }

  /**
   * A new order; with `idempotencyKey`, a create already made with that key
   * answers the order it made instead (a retry, or a mirrored call reaching a
   * second service that shares this store).
   */
  create(customer: string, items: LineItem[], idempotencyKey?: string): Order {
    const earlier = idempotencyKey === undefined ? undefined : this.byKey.get(idempotencyKey);
    const existing = earlier === undefined ? undefined : this.orders.get(earlier);
    if (existing) return existing;
    const order = this.add(customer, items);
    if (idempotencyKey !== undefined) {
      this.byKey.set(idempotencyKey, order.id);
      // Bounded as the orders are: the oldest keys go first.
      if (this.byKey.size > MAX_ORDERS) this.byKey.delete(this.byKey.keys().next().value!);
    }
    this.created.emit('order', order);
    return order;
  }

  /** Calls `listener` with each order created from now on; returns the unsubscribe function. */
  onCreated(listener: (order: Order) => void): () => void {
    this.created.on('order', listener);
    return () => this.created.off('order', listener);
  }

  private add(customer: string, items: LineItem[]): Order {
    const id = `ord-${String(this.nextId++).padStart(6, '0')}`;
    const totalCents = items.reduce((sum, item) => sum + item.unitPriceCents * BigInt(item.quantity), 0n);
    const order = create(OrderSchema, {
      id,
      customer,
      items,
      totalCents,
      status: OrderStatus.PENDING,
      createdAtMs: BigInt(Date.now()),
    });
    this.orders.set(id, order);
    if (this.orders.size > MAX_ORDERS) {
      const oldest = this.orders.keys().next().value;
      if (oldest !== undefined) this.orders.delete(oldest);
    }
    return order;
  }
}

/** The fields a full order adds to a compact one: addresses, payment, shipping, money breakdown, notes, tags. */
function fillDetails(order: Order, i: number): void {
  const address = create(AddressSchema, {
    name: `${order.customer} receiving dock ${1 + (i % 4)}`,
    line1: `${100 + i} Industrial Parkway`,
    line2: `Building ${String.fromCharCode(65 + (i % 6))}, loading bay ${1 + (i % 9)}`,
    city: 'Springfield',
    region: 'Oregon',
    postalCode: `97${String(400 + i).padStart(3, '0')}`,
    country: 'US',
  });
  const shippingCents = 1_250n;
  const taxCents = (order.totalCents * 8n) / 100n;
  order.currency = 'USD';
  order.updatedAtMs = order.createdAtMs + 3_600_000n;
  order.shippingAddress = address;
  order.billingAddress = create(AddressSchema, { ...address, name: `${order.customer} accounts payable`, line2: 'Finance department, 3rd floor' });
  order.paymentMethod = 'card_visa_4242_exp_2029_12';
  order.carrier = 'united-parcel-ground';
  order.trackingNumber = `1Z999AA1${String(1_000_000_000 + i * 7919).slice(0, 10)}`;
  order.subtotalCents = order.totalCents;
  order.taxCents = taxCents;
  order.shippingCents = shippingCents;
  order.totalCents = order.totalCents + taxCents + shippingCents;
  order.notes = 'Deliver to the loading bay between 08:00 and 16:00 on weekdays; call the dock supervisor 30 minutes before arrival.';
  order.tags = ['priority', 'b2b', 'net-30', `region-${i % 5}`];
}
