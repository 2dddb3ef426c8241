// The data plane's one clock: performance.now() milliseconds, monotonic. Every
// time on a call or connection record is read from it. A module of its own so
// that the connection pools, forwarders and relay can read the time without
// importing the call (call/call.ts), which would close an import cycle through
// the proxy context.
import { performance } from 'node:perf_hooks';

export const now = (): number => performance.now();
