import { fileURLToPath } from 'node:url';

/** The demo's .proto root, for @grpc/proto-loader and for sidecar configs that read google.api.http rules. */
export const PROTO_DIR = fileURLToPath(new URL('../proto/', import.meta.url));

export const ECHO_PROTO = 'echo/v1/echo.proto';
export const ORDER_PROTO = 'order/v1/order.proto';
/** Maps the order service's tRPC procedures onto the operations of their RPC and REST twins (`--operations`). */
export const ORDER_OPERATIONS = fileURLToPath(new URL('../operations.yaml', import.meta.url));
