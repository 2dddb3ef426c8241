// gRPC status code to the HTTP status a REST caller gets, from the "HTTP
// Mapping" each code carries in googleapis google/rpc/code.proto — the mapping
// grpc-gateway and Envoy's JSON transcoder use. The reverse direction (a REST
// status read as a code) is protocol/status-codes.ts's restStatusToGrpcCode.
import { GrpcCode } from '../protocol/status-codes.ts';

const HTTP_STATUS: Readonly<Record<number, number>> = {
  [GrpcCode.OK]: 200,
  [GrpcCode.CANCELLED]: 499,
  [GrpcCode.UNKNOWN]: 500,
  [GrpcCode.INVALID_ARGUMENT]: 400,
  [GrpcCode.DEADLINE_EXCEEDED]: 504,
  [GrpcCode.NOT_FOUND]: 404,
  [GrpcCode.ALREADY_EXISTS]: 409,
  [GrpcCode.PERMISSION_DENIED]: 403,
  [GrpcCode.RESOURCE_EXHAUSTED]: 429,
  [GrpcCode.FAILED_PRECONDITION]: 400,
  [GrpcCode.ABORTED]: 409,
  [GrpcCode.OUT_OF_RANGE]: 400,
  [GrpcCode.UNIMPLEMENTED]: 501,
  [GrpcCode.INTERNAL]: 500,
  [GrpcCode.UNAVAILABLE]: 503,
  [GrpcCode.DATA_LOSS]: 500,
  [GrpcCode.UNAUTHENTICATED]: 401,
};

/** A code outside the table is UNKNOWN's 500, as a gRPC client reads an unknown code. */
export function grpcCodeToHttpStatus(code: number): number {
  return HTTP_STATUS[code] ?? 500;
}
