// Between the order operations' gRPC codes and tRPC's error codes, both ways:
// the router answers a failed operation with the tRPC error whose meaning is
// closest, and the demo's tRPC caller reads it back as the gRPC code the
// sidecar's `code` label gives it (docs/metrics.md, "tRPC").
//
// Source: @trpc/server 11, TRPC_ERROR_CODES_BY_KEY and JSONRPC2_TO_HTTP_CODE
// (https://trpc.io/docs/server/error-handling).
import { Code } from '@connectrpc/connect';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server';
import type { GrpcCodeName } from './grpc-code-names.ts';

/** A failed operation's code -> the tRPC error it is answered with. */
const TO_TRPC: Partial<Record<Code, TRPC_ERROR_CODE_KEY>> = {
  [Code.Canceled]: 'CLIENT_CLOSED_REQUEST',
  [Code.InvalidArgument]: 'BAD_REQUEST',
  [Code.DeadlineExceeded]: 'TIMEOUT',
  [Code.NotFound]: 'NOT_FOUND',
  [Code.AlreadyExists]: 'CONFLICT',
  [Code.PermissionDenied]: 'FORBIDDEN',
  [Code.ResourceExhausted]: 'TOO_MANY_REQUESTS',
  [Code.FailedPrecondition]: 'PRECONDITION_FAILED',
  [Code.Aborted]: 'CONFLICT',
  [Code.Unimplemented]: 'NOT_IMPLEMENTED',
  [Code.Unavailable]: 'SERVICE_UNAVAILABLE',
  [Code.Unauthenticated]: 'UNAUTHORIZED',
};

export const trpcCodeOf = (code: Code): TRPC_ERROR_CODE_KEY => TO_TRPC[code] ?? 'INTERNAL_SERVER_ERROR';

/** A tRPC error code -> the gRPC code name, as the metric reference's tRPC table maps it. */
const FROM_TRPC: Record<string, GrpcCodeName> = {
  PARSE_ERROR: 'INVALID_ARGUMENT',
  BAD_REQUEST: 'INVALID_ARGUMENT',
  UNAUTHORIZED: 'UNAUTHENTICATED',
  PAYMENT_REQUIRED: 'FAILED_PRECONDITION',
  FORBIDDEN: 'PERMISSION_DENIED',
  NOT_FOUND: 'NOT_FOUND',
  METHOD_NOT_SUPPORTED: 'UNIMPLEMENTED',
  TIMEOUT: 'DEADLINE_EXCEEDED',
  CONFLICT: 'ABORTED',
  PRECONDITION_FAILED: 'FAILED_PRECONDITION',
  PRECONDITION_REQUIRED: 'FAILED_PRECONDITION',
  PAYLOAD_TOO_LARGE: 'RESOURCE_EXHAUSTED',
  UNSUPPORTED_MEDIA_TYPE: 'INVALID_ARGUMENT',
  UNPROCESSABLE_CONTENT: 'INVALID_ARGUMENT',
  TOO_MANY_REQUESTS: 'RESOURCE_EXHAUSTED',
  CLIENT_CLOSED_REQUEST: 'CANCELLED',
  INTERNAL_SERVER_ERROR: 'INTERNAL',
  NOT_IMPLEMENTED: 'UNIMPLEMENTED',
  BAD_GATEWAY: 'UNAVAILABLE',
  SERVICE_UNAVAILABLE: 'UNAVAILABLE',
  GATEWAY_TIMEOUT: 'DEADLINE_EXCEEDED',
};

export const grpcCodeFromTrpc = (code: string | undefined): GrpcCodeName => (code === undefined ? 'UNKNOWN' : (FROM_TRPC[code] ?? 'UNKNOWN'));
