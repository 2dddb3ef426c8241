import type { Endpoint } from './endpoint.ts';
import type { Picker } from './picker.ts';

/**
 * One endpoint per downstream connection for that connection's whole life: what
 * a plain HTTP/2 client behind a connection-level balancer (kube-proxy) gets.
 * It exists to show the skew that causes, and to compare with the others.
 */
export class StickyPicker implements Picker {
  private readonly pinned = new Map<number, Endpoint>();
  private next = 0;

  pick(usable: readonly Endpoint[], connectionId: number): Endpoint {
    const pin = this.pinned.get(connectionId);
    if (pin && usable.includes(pin)) return pin;
    const e = usable[this.next++ % usable.length]!;
    this.pinned.set(connectionId, e);
    return e;
  }

  connectionClosed(connectionId: number): void {
    this.pinned.delete(connectionId);
  }
}
