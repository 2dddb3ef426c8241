// The data plane's one clock: performance.now() milliseconds, monotonic. Every
// time on a call or connection record is read from it. A module of its own so
// that the connection pools, forwarders and relay can read the time without
// importing the call (call/call.ts), which would close an import cycle through
// the proxy context.
//
// A data plane handling one socket read (the balanced relay's, from holdTime to
// releaseTime) reads one time for everything that happens in it: the octets
// arrived together, and a unary call's start and send, or its answer's headers,
// first message and end, would otherwise each read the clock within a few
// microseconds of one another. The time is read at the first `now()` of the read.
import { performance } from 'node:perf_hooks';

let holding = false;
/** The read's time once read, else -1. */
let held = -1;

export const now = (): number => {
  if (!holding) return performance.now();
  if (held < 0) held = performance.now();
  return held;
};

/** A socket read is being handled: `now()` gives one time until releaseTime. */
export function holdTime(): void {
  holding = true;
  held = -1;
}

/** The read is handled: `now()` reads the clock again. */
export function releaseTime(): void {
  holding = false;
}
