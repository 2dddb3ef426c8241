// Deadline headers. A value that does not parse is reported as such
// (`rpcscope_deadline_header_invalid_total`) and the call is proxied as if it
// carried none: the sidecar observes, it does not reject what the upstream may accept.
import type { DeadlineHeader } from './vocabulary.ts';

/** Milliseconds per `grpc-timeout` unit. */
const GRPC_TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1_000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/**
 * `grpc-timeout`, grpc/grpc doc/PROTOCOL-HTTP2.md: TimeoutValue is at most 8
 * ASCII digits, TimeoutUnit one of H M S m u n. Returns milliseconds (fractional
 * below 1 ms). The spec says "positive integer" but clients do send `0n` for an
 * already expired deadline, so zero is accepted: it is a real, spent budget.
 */
export function parseGrpcTimeout(value: string): number | undefined {
  const m = /^(\d{1,8})([HMSmun])$/.exec(value);
  if (m === null) return undefined;
  return Number(m[1]) * GRPC_TIMEOUT_UNIT_MS[m[2]!]!;
}

/**
 * `connect-timeout-ms`, connectrpc.com/docs/protocol ("Timeout-Milliseconds"):
 * at most 10 ASCII digits, milliseconds.
 */
export function parseConnectTimeoutMs(value: string): number | undefined {
  return /^\d{1,10}$/.test(value) ? Number(value) : undefined;
}

/** The budget a deadline header carries, in milliseconds; undefined when it does not parse. */
export function parseDeadlineHeader(header: DeadlineHeader, value: string): number | undefined {
  return header === 'grpc-timeout' ? parseGrpcTimeout(value) : parseConnectTimeoutMs(value);
}
