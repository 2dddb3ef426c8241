import { EventEmitter } from 'node:events';
import { create } from '@bufbuild/protobuf';
import { LineItemSchema, OrderSchema, OrderStatus } from './gen/order/v1/order_pb.ts';
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
  private nextId = 1;

  /** Seeds `seed` orders deterministically, so ids `ord-000001`.. exist in every fresh store. */
  constructor(seed: number) {
    this.created.setMaxListeners(0);
    for (let i = 0; i < seed; i++) {
      const sku = SKUS[i % SKUS.length] ?? SKUS[0]!;
      const order = this.add(CUSTOMERS[i % CUSTOMERS.length] ?? 'acme', [
        create(LineItemSchema, { sku: sku[0], quantity: 1 + (i % 3), unitPriceCents: sku[1] }),
      ]);
      order.status = STATUSES[i % STATUSES.length] ?? OrderStatus.PENDING;
    }
  }

  get(id: string): Order | undefined {
    return this.orders.get(id);
  }

  /** Newest first. */
  list(customer: string, limit: number): Order[] {
    const out: Order[] = [];
    const all = [...this.orders.values()];
    for (let i = all.length - 1; i >= 0 && out.length < limit; i--) {
      const order = all[i]!;
      if (customer === '' || order.customer === customer) out.push(order);
    }
    return out;
  }

  /** Oldest first, as a watcher replays them. */
  existing(customer: string): Order[] {
    return [...this.orders.values()].filter((o) => customer === '' || o.customer === customer);
  }

  create(customer: string, items: LineItem[]): Order {
    const order = this.add(customer, items);
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
