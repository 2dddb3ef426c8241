// Which header carries a call's deadline, by protocol: gRPC and gRPC-Web send
// `grpc-timeout`, Connect sends `connect-timeout-ms`, REST and tRPC have none.
import type { CallDeadline, Protocol } from './vocabulary.ts';
import { parseDeadlineHeader } from './deadline.ts';

type HeaderBag = Record<string, string | string[] | undefined>;

export function readDeadline(protocol: Protocol, headers: HeaderBag): CallDeadline | undefined {
  if (protocol === 'rest' || protocol === 'trpc') return undefined;
  const header = protocol === 'connect' ? 'connect-timeout-ms' : 'grpc-timeout';
  const value = headers[header];
  if (value === undefined) return undefined;
  const raw = Array.isArray(value) ? value.join(',') : value;
  return { header, raw, ms: parseDeadlineHeader(header, raw) };
}
