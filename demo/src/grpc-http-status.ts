import type { GrpcCodeName } from './grpc-code-names.ts';

/**
 * The HTTP status a REST gateway answers for each gRPC code, as gRPC
 * transcoding does (grpc-gateway's HTTPStatusFromCode, from the
 * google.rpc.Code comments). Indexed by code number.
 */
const HTTP_STATUS_BY_CODE: readonly number[] = [
  200, // OK
  499, // CANCELLED: the client closed the request
  500, // UNKNOWN
  400, // INVALID_ARGUMENT
  504, // DEADLINE_EXCEEDED
  404, // NOT_FOUND
  409, // ALREADY_EXISTS
  403, // PERMISSION_DENIED
  429, // RESOURCE_EXHAUSTED
  400, // FAILED_PRECONDITION: 400, not 412, so a client does not retry on a precondition header it never sent
  409, // ABORTED
  400, // OUT_OF_RANGE
  501, // UNIMPLEMENTED
  500, // INTERNAL
  503, // UNAVAILABLE
  500, // DATA_LOSS
  401, // UNAUTHENTICATED
];

export function httpStatusFromCode(code: number): number {
  return HTTP_STATUS_BY_CODE[code] ?? 500;
}

/**
 * The code a REST caller's outcome counts as, by the google.rpc.Code table the
 * sidecar uses (docs/metrics.md, `code` label), so the traffic generator's counts
 * can be compared with the sidecar's series.
 */
export function codeFromHttpStatus(status: number): GrpcCodeName {
  if (status >= 200 && status < 400) return 'OK';
  const exact: Record<number, GrpcCodeName> = {
    400: 'INVALID_ARGUMENT',
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    409: 'ABORTED',
    412: 'FAILED_PRECONDITION',
    429: 'RESOURCE_EXHAUSTED',
    499: 'CANCELLED',
    500: 'INTERNAL',
    501: 'UNIMPLEMENTED',
    503: 'UNAVAILABLE',
    504: 'DEADLINE_EXCEEDED',
  };
  return exact[status] ?? (status < 500 ? 'FAILED_PRECONDITION' : 'UNKNOWN');
}
