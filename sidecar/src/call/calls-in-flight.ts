// How many calls are in flight, what a drain waits on (pipeline.ts). A count, not
// a set of the calls: nothing walks them, and a Set whose last call ends rebuilds
// its table each time (one call at a time, every call), where a count costs an
// increment and allocates nothing.
export class CallsInFlight {
  /** Calls started and not yet ended. */
  count = 0;

  started(): void {
    this.count++;
  }

  ended(): void {
    this.count--;
  }
}
