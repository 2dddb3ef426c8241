// What the blackhole scenarios wait for, each measured from when it was asked,
// and the keepalive they run the sidecars with.
import { setTimeout as sleep } from 'node:timers/promises';
import type { OutboundSidecar } from './cluster.ts';

/** The state /debug/connections gives the endpoint at `address` (ready, ejected, probing, draining). */
export async function endpointState(outbound: OutboundSidecar, address: string): Promise<string | undefined> {
  const view = await outbound.debugConnections();
  return (view.endpoints as { upstream: string; state: string }[] | undefined)?.find((e) => e.upstream === address)?.state;
}

/** Milliseconds until `check` holds, polled every 100 ms; throws past `timeoutMs`. */
export async function until(what: string, timeoutMs: number, check: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await check()) return Date.now() - start;
    if (Date.now() - start > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** The scenarios' --keepalive-interval and --keepalive-timeout: short, so that a vanished peer is found in seconds. */
export const INTERVAL_MS = 1000;
export const TIMEOUT_MS = 1000;
export const KEEPALIVE = ['--keepalive-interval', `${INTERVAL_MS}ms`, '--keepalive-timeout', `${TIMEOUT_MS}ms`];
/**
 * The latest a vanished peer is found after its last byte: a quiet interval
 * (±10 %) to notice, one more to PING (or, over HTTP/1.1, between two ticks of
 * the liveness watch), then the timeout.
 */
export const DETECT_MS = 2 * 1.1 * INTERVAL_MS + TIMEOUT_MS;
/** Scheduling on 2 shared cores. */
export const SLACK_MS = 1000;
