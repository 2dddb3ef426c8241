// Waiting for a condition instead of sleeping: a test polls what a user would
// look at until it holds, and fails with the last reading when it does not
// within the time allowed. A fixed sleep either wastes time or races.

/** Polls `check` until it returns a value other than undefined (or false); rejects with `what` and the last error after `timeoutMs`. */
export async function eventually<T>(check: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not so within ${timeoutMs} ms${last ? ` (${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Reads `read` until its value has not changed for `stableMs` (at most `maxMs`), and returns that value: where a flow has stopped. */
export async function settled(read: () => number, stableMs = 1000, maxMs = 20_000, everyMs = 50): Promise<number> {
  const start = Date.now();
  let value = read();
  let since = Date.now();
  while (Date.now() - since < stableMs && Date.now() - start < maxMs) {
    await new Promise((r) => setTimeout(r, everyMs));
    const now = read();
    if (now !== value) {
      value = now;
      since = Date.now();
    }
  }
  return value;
}
