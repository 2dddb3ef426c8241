// `rpc.system.name` (OpenTelemetry semantic conventions, RPC) by rpcscope
// protocol, on spans and on the OTLP call duration: the registry's values where
// it has one (`grpc`, `connectrpc`); gRPC-Web is gRPC over another framing; tRPC
// has no registry value and is named as rpcscope names it.
// https://opentelemetry.io/docs/specs/semconv/registry/attributes/rpc/
import type { Protocol } from '../protocol/vocabulary.ts';

export const RPC_SYSTEM: Readonly<Record<Exclude<Protocol, 'rest'>, string>> = { grpc: 'grpc', grpc_web: 'grpc', connect: 'connectrpc', trpc: 'trpc' };
