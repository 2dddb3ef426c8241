// tRPC's error codes onto the one status vocabulary (docs/metrics.md, "tRPC").
// A tRPC error carries `code` (a JSON-RPC 2.0 number) and, in the default
// error shape, `data.code` (the name) and `data.httpStatus`. The name is the
// most precise, so it decides; then the HTTP status by the REST table; the
// number last (several names share -32603).
// Names and numbers: @trpc/server src/unstable-core-do-not-import/rpc/codes.ts
// (TRPC_ERROR_CODES_BY_KEY), https://trpc.io/docs/server/error-handling
import { GrpcCode, restStatusToGrpcCode } from './status-codes.ts';

const BY_NAME: ReadonlyMap<string, number> = new Map([
  ['PARSE_ERROR', GrpcCode.INVALID_ARGUMENT], // 400
  ['BAD_REQUEST', GrpcCode.INVALID_ARGUMENT], // 400
  ['UNAUTHORIZED', GrpcCode.UNAUTHENTICATED], // 401
  ['PAYMENT_REQUIRED', GrpcCode.FAILED_PRECONDITION], // 402
  ['FORBIDDEN', GrpcCode.PERMISSION_DENIED], // 403
  ['NOT_FOUND', GrpcCode.NOT_FOUND], // 404: also an unknown procedure
  ['METHOD_NOT_SUPPORTED', GrpcCode.UNIMPLEMENTED], // 405: a query sent as POST, a mutation as GET
  ['TIMEOUT', GrpcCode.DEADLINE_EXCEEDED], // 408
  ['CONFLICT', GrpcCode.ABORTED], // 409, as in the REST table
  ['PRECONDITION_FAILED', GrpcCode.FAILED_PRECONDITION], // 412
  ['PAYLOAD_TOO_LARGE', GrpcCode.RESOURCE_EXHAUSTED], // 413
  ['UNSUPPORTED_MEDIA_TYPE', GrpcCode.INVALID_ARGUMENT], // 415
  ['UNPROCESSABLE_CONTENT', GrpcCode.INVALID_ARGUMENT], // 422
  ['PRECONDITION_REQUIRED', GrpcCode.FAILED_PRECONDITION], // 428
  ['TOO_MANY_REQUESTS', GrpcCode.RESOURCE_EXHAUSTED], // 429
  ['CLIENT_CLOSED_REQUEST', GrpcCode.CANCELLED], // 499
  ['INTERNAL_SERVER_ERROR', GrpcCode.INTERNAL], // 500
  ['NOT_IMPLEMENTED', GrpcCode.UNIMPLEMENTED], // 501
  ['BAD_GATEWAY', GrpcCode.UNAVAILABLE], // 502
  ['SERVICE_UNAVAILABLE', GrpcCode.UNAVAILABLE], // 503
  ['GATEWAY_TIMEOUT', GrpcCode.DEADLINE_EXCEEDED], // 504
]);

/** JSON-RPC numbers that name one tRPC code alone (-32603 is five of them: INTERNAL). */
const BY_NUMBER: ReadonlyMap<number, number> = new Map([
  [-32700, GrpcCode.INVALID_ARGUMENT],
  [-32600, GrpcCode.INVALID_ARGUMENT],
  [-32603, GrpcCode.INTERNAL],
  [-32001, GrpcCode.UNAUTHENTICATED],
  [-32002, GrpcCode.FAILED_PRECONDITION],
  [-32003, GrpcCode.PERMISSION_DENIED],
  [-32004, GrpcCode.NOT_FOUND],
  [-32005, GrpcCode.UNIMPLEMENTED],
  [-32008, GrpcCode.DEADLINE_EXCEEDED],
  [-32009, GrpcCode.ABORTED],
  [-32012, GrpcCode.FAILED_PRECONDITION],
  [-32013, GrpcCode.RESOURCE_EXHAUSTED],
  [-32015, GrpcCode.INVALID_ARGUMENT],
  [-32022, GrpcCode.INVALID_ARGUMENT],
  [-32028, GrpcCode.FAILED_PRECONDITION],
  [-32029, GrpcCode.RESOURCE_EXHAUSTED],
  [-32099, GrpcCode.CANCELLED],
]);

/** What one tRPC error said; any part may be missing (a custom error formatter). */
export interface TrpcErrorFacts {
  name: string | undefined;
  httpStatus: number | undefined;
  number: number | undefined;
}

export function trpcErrorToGrpcCode(e: TrpcErrorFacts): number {
  const byName = e.name === undefined ? undefined : BY_NAME.get(e.name);
  if (byName !== undefined) return byName;
  if (e.httpStatus !== undefined && e.httpStatus >= 400) return restStatusToGrpcCode(e.httpStatus);
  return (e.number === undefined ? undefined : BY_NUMBER.get(e.number)) ?? GrpcCode.UNKNOWN;
}
