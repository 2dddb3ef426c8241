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
