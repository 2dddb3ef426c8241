// Status code tables. Every protocol's outcome is reported as a gRPC status
// code (docs/metrics.md, `code` label) so that one operation can be compared across
// protocols; these tables are the translations, each from the spec that defines it.

/**
 * gRPC status codes, by number. Source: grpc/grpc doc/statuscodes.md; the
 * numbers are on the wire in `grpc-status` and must never be renumbered.
 */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const GRPC_CODE_NAMES: readonly string[] = Object.keys(GrpcCode);

/**
 * The name of a gRPC status code. A number outside the table is reported as
 * UNKNOWN, as gRPC clients do with codes they do not know (statuscodes.md),
 * which also keeps the `code` label bounded whatever an upstream sends.
 */
export function grpcCodeName(code: number): string {
  return GRPC_CODE_NAMES[code] ?? 'UNKNOWN';
}

/**
 * REST: HTTP status to the code google.rpc.Code documents for it (googleapis
 * google/rpc/code.proto, each code's "HTTP Mapping"), as docs/metrics.md fixes it;
 * 2xx and 3xx are successes to a REST caller.
 */
export function restStatusToGrpcCode(status: number): number {
  if (status >= 200 && status < 400) return GrpcCode.OK;
  switch (status) {
    case 400: return GrpcCode.INVALID_ARGUMENT;
    case 401: return GrpcCode.UNAUTHENTICATED;
    case 403: return GrpcCode.PERMISSION_DENIED;
    case 404: return GrpcCode.NOT_FOUND;
    case 409: return GrpcCode.ABORTED;
    case 412: return GrpcCode.FAILED_PRECONDITION;
    case 429: return GrpcCode.RESOURCE_EXHAUSTED;
    case 499: return GrpcCode.CANCELLED;
    case 500: return GrpcCode.INTERNAL;
    case 501: return GrpcCode.UNIMPLEMENTED;
    case 503: return GrpcCode.UNAVAILABLE;
    case 504: return GrpcCode.DEADLINE_EXCEEDED;
  }
  if (status >= 400 && status < 500) return GrpcCode.FAILED_PRECONDITION;
  return GrpcCode.UNKNOWN;
}

/**
 * gRPC family (gRPC, gRPC-Web, Connect) responses that carry no status of their
 * own: the code a client library synthesizes from the HTTP status, so that the
 * label says what the caller saw. Source: grpc/grpc doc/http-grpc-status-mapping.md,
 * and the identical table of the Connect protocol ("HTTP to Error Code").
 * It differs from the REST table on purpose: a 404 from a gRPC server means the
 * method is not there (UNIMPLEMENTED), and 200 without a status is a broken call.
 */
export function rpcHttpStatusToGrpcCode(status: number): number {
  switch (status) {
    case 400: return GrpcCode.INTERNAL;
    case 401: return GrpcCode.UNAUTHENTICATED;
    case 403: return GrpcCode.PERMISSION_DENIED;
    case 404: return GrpcCode.UNIMPLEMENTED;
    case 429:
    case 502:
    case 503:
    case 504: return GrpcCode.UNAVAILABLE;
    default: return GrpcCode.UNKNOWN;
  }
}

/**
 * Connect error code strings (connectrpc.com/docs/protocol, "Error Codes"):
 * the gRPC names in snake_case, except that Connect spells CANCELLED `canceled`.
 */
const CONNECT_CODES: ReadonlyMap<string, number> = new Map([
  ['canceled', GrpcCode.CANCELLED],
  ['unknown', GrpcCode.UNKNOWN],
  ['invalid_argument', GrpcCode.INVALID_ARGUMENT],
  ['deadline_exceeded', GrpcCode.DEADLINE_EXCEEDED],
  ['not_found', GrpcCode.NOT_FOUND],
  ['already_exists', GrpcCode.ALREADY_EXISTS],
  ['permission_denied', GrpcCode.PERMISSION_DENIED],
  ['resource_exhausted', GrpcCode.RESOURCE_EXHAUSTED],
  ['failed_precondition', GrpcCode.FAILED_PRECONDITION],
  ['aborted', GrpcCode.ABORTED],
  ['out_of_range', GrpcCode.OUT_OF_RANGE],
  ['unimplemented', GrpcCode.UNIMPLEMENTED],
  ['internal', GrpcCode.INTERNAL],
  ['unavailable', GrpcCode.UNAVAILABLE],
  ['data_loss', GrpcCode.DATA_LOSS],
  ['unauthenticated', GrpcCode.UNAUTHENTICATED],
]);

/** A Connect code string as a gRPC code; a string Connect does not define is UNKNOWN, which keeps the label bounded. */
export function connectCodeToGrpcCode(code: string): number {
  return CONNECT_CODES.get(code) ?? GrpcCode.UNKNOWN;
}
