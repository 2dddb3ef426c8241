/** gRPC status code names by number (grpc/doc/statuscodes.md), as the sidecar's `code` label spells them. */
export const GRPC_CODE_NAMES = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

export type GrpcCodeName = (typeof GRPC_CODE_NAMES)[number];

export function grpcCodeName(code: number): GrpcCodeName {
  return GRPC_CODE_NAMES[code] ?? 'UNKNOWN';
}
