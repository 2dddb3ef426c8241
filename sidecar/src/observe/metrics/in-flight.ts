// The calls in flight, which a scrape reads (messages counted so far, the
// endpoint each went to): a list threaded through the calls' observations, in
// the order the calls started. A Set of records did this before: two hash
// lookups a call, and, as entries come and go, a new table every few calls.
// Adding and removing here sets a few fields.
import type { CallRecord } from '../../call/call-record.ts';

/** What a call's observation (metrics/call-recorder.ts) holds for the list. */
export interface InFlightEntry<T> {
  call: CallRecord | undefined;
  /** The list the entry is on. */
  list: object | undefined;
  prev: T | undefined;
  next: T | undefined;
}

export class InFlightCalls<Entry extends InFlightEntry<Entry>> {
  private head: Entry | undefined;
  private tail: Entry | undefined;

  /** `call` started, observed as `obs` (not listed yet). */
  add(call: CallRecord, obs: Entry): void {
    obs.call = call;
    obs.list = this;
    obs.prev = this.tail;
    obs.next = undefined;
    if (this.tail) this.tail.next = obs;
    else this.head = obs;
    this.tail = obs;
  }

  /**
   * Takes `call` off the list; whether it was on it. `obs` is the observation the
   * call carries, if any: its entry goes at once. Without it (another observer
   * took the call's slot, or the call was listed again as it ended), the list is
   * searched and every entry of the call goes, as it would from a Set.
   */
  delete(call: CallRecord, obs: Entry | undefined): boolean {
    if (obs !== undefined && obs.list === this && obs.call === call) {
      this.unlink(obs);
      return true;
    }
    let found = false;
    for (let node = this.head; node !== undefined; ) {
      const next = node.next;
      if (node.call === call) {
        this.unlink(node);
        found = true;
      }
      node = next;
    }
    return found;
  }

  /** Whether `call` is on the list (`obs` as for delete). */
  has(call: CallRecord, obs: Entry | undefined): boolean {
    return (obs !== undefined && obs.list === this && obs.call === call) || this.find(call) !== undefined;
  }

  /** Each call in flight with its observation, in the order they started. */
  forEach(fn: (call: CallRecord, obs: Entry) => void): void {
    for (let node = this.head; node !== undefined; node = node.next) fn(node.call!, node);
  }

  private unlink(node: Entry): void {
    if (node.prev) node.prev.next = node.next;
    else this.head = node.next;
    if (node.next) node.next.prev = node.prev;
    else this.tail = node.prev;
    node.call = node.prev = node.next = node.list = undefined;
  }

  private find(call: CallRecord): Entry | undefined {
    for (let node = this.head; node !== undefined; node = node.next) if (node.call === call) return node;
    return undefined;
  }
}
