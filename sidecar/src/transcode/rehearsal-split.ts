// --split: a share of an operation's REST calls goes to the gRPC upstream through
// the transcoder, the rest to the REST upstream, so both paths of one operation
// run side by side under the same live load. The share is kept by a counter per
// operation rather than by chance: of any n calls, floor(n × percent / 100) are
// transcoded, spread evenly (the k-th call is transcoded when the running total
// crosses an integer), so a test and a dashboard both see exactly the share asked.

export class RehearsalSplit {
  private readonly counts = new Map<string, number>();

  constructor(private readonly percents: ReadonlyMap<string, number>) {}

  /** Operations the split names, for checking them against the bindings at start. */
  get operations(): Iterable<string> {
    return this.percents.keys();
  }

  /** Whether this call of `operation` is transcoded; undefined when the split does not name it. */
  /** Whether --split names the operation (its calls' share is counted only by transcodes()). */
  names(operation: string): boolean {
    return this.percents.has(operation);
  }

  transcodes(operation: string): boolean | undefined {
    const percent = this.percents.get(operation);
    if (percent === undefined) return undefined;
    const n = (this.counts.get(operation) ?? 0) + 1;
    this.counts.set(operation, n);
    return Math.floor((n * percent) / 100) > Math.floor(((n - 1) * percent) / 100);
  }
}
