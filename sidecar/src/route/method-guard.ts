// The cardinality guard: each distinct `method` label is a family of series in
// every call metric, so the number of them per protocol is capped. Methods seen
// before the cap keep their series for the life of the process (a dashboard's
// line never disappears); later ones, and anything not well-formed, share one.

/** The `method` (and `operation`) label of every call the guard folds away. */
export const OTHER = '_OTHER';

export class MethodGuard {
  private readonly seen = new Set<string>();

  constructor(private readonly maxMethods: number) {}

  /** The label to use for `method`: itself while there is room or once admitted, else OTHER. */
  admit(method: string): string {
    if (this.seen.has(method)) return method;
    if (method === OTHER || this.seen.size >= this.maxMethods) return OTHER;
    this.seen.add(method);
    return method;
  }

  /** Gives back the room of a label whose series were dropped (an upstream endpoint that left). */
  forget(method: string): void {
    this.seen.delete(method);
  }
}
