// The demo services, as the sidecar's tests, `npm run demo` and the fleet simulations start them.
export type { ListenOptions, Upstream } from './upstream.ts';
export { startConnectEcho } from './connect-echo-server.ts';
export { startGrpcJsEcho } from './grpc-js-echo-server.ts';
export { startOrderService } from './order-server.ts';
export type { OrderServiceOptions } from './order-server.ts';
export { DELAY_HEADER, FAIL_CODE_HEADER, IDEMPOTENCY_HEADER } from './order-operations.ts';
export type { OrderVersion } from './order-operations.ts';
export { OrderStore } from './order-store.ts';
export { TRPC_PREFIX } from './order-trpc-router.ts';
export type { OrderTrpcRouter } from './order-trpc-router.ts';
export { REQUESTED_FAILURE, deterministicBytes } from './echo-behaviour.ts';
export { ECHO_PROTO, ORDER_PROTO, PROTO_DIR } from './proto-files.ts';
export { EchoService } from './gen/echo/v1/echo_pb.ts';
export { OrderService } from './gen/order/v1/order_pb.ts';
export { EchoServiceClient as GrpcJsEchoClient } from './grpc-js-echo-loader.ts';
export type { EchoRequestObject, EchoResponseObject } from './grpc-js-echo-loader.ts';
// Starting an answer over HTTP/1.1 or HTTP/2 alike, for the tests' own apps.
export { writeHead } from './http-json.ts';
