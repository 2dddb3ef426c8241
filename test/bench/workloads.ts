// The calls of the load benchmark and the files its upstreams answer them with.
// The order is the demo's 18-field order (order.v1.Order, about 1.2 kB as
// JSON): as gRPC it is GetOrder's protobuf answer, as REST the JSON of
// GET /v1/orders/{id}, served over HTTP/1.1.
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { create, toBinary, toJsonString } from '@bufbuild/protobuf';
import { GetOrderRequestSchema, OrderSchema } from '@rpcscope/demo/gen/order/v1/order_pb.ts';
import { OrderStore } from '../../demo/src/order-store.ts';
import type { Frontend } from './peers.ts';

export interface Workload {
  id: string;
  title: string;
  frontend: Frontend;
  upstreamProto: 'h2' | 'h1';
  path: string;
  /** h2load's request arguments (body, headers, --h1). */
  request: string[];
  /** Calls at saturation; the other phases take fewer. */
  calls: number;
  /** The fixed rate, calls/s. */
  rate: number;
  serialCalls: number;
  saturation: string[];
  fixedRate: string[];
  /** The fixed rate as fixedRate spreads it, in words for the table. */
  fixedShape: string;
  /** The same rate over 8 connections, one call at a time on each (h2load -c 8 -m 1). */
  spread: string[];
}

/** gRPC's length-prefixed message: a compressed flag, a 4-byte big-endian length, the bytes (gRPC over HTTP/2, "Length-Prefixed-Message"). */
export function grpcFrame(message: Uint8Array): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

/** One call at a time on one connection (h2load -c 1 -m 1): the c=1 shape, whose p50 less the direct path's is the latency a proxy adds. */
export const ONE_AT_A_TIME: readonly string[] = ['-c', '1', '-m', '1'];

export const STREAM_MESSAGES = 1000;

export interface Files {
  docroot: string;
  orderJsonBytes: number;
  orderProtoBytes: number;
}

/** Writes the request bodies and the upstream's docroot under `work`. */
export function writeFiles(work: string): Files {
  const docroot = join(work, 'docroot');
  // nginx started as root serves files as an unprivileged worker user, which the 0700 of a temp directory would shut out (403).
  chmodSync(work, 0o755);
  for (const dir of ['bench.v1.BenchService', 'order.v1.OrderService', 'v1/orders']) mkdirSync(join(docroot, dir), { recursive: true });
  const unary = grpcFrame(Buffer.alloc(256, 1));
  writeFileSync(join(work, 'unary.bin'), unary);
  writeFileSync(join(docroot, 'bench.v1.BenchService', 'Unary'), unary);
  writeFileSync(join(docroot, 'bench.v1.BenchService', 'Stream'), Buffer.concat(Array.from({ length: STREAM_MESSAGES }, () => unary)));
  const order = new OrderStore(1, 1).get('ord-000001')!;
  const orderProto = toBinary(OrderSchema, order);
  const orderJson = toJsonString(OrderSchema, order);
  writeFileSync(join(work, 'get-order.bin'), grpcFrame(toBinary(GetOrderRequestSchema, create(GetOrderRequestSchema, { id: order.id }))));
  writeFileSync(join(docroot, 'order.v1.OrderService', 'GetOrder'), grpcFrame(orderProto));
  writeFileSync(join(docroot, 'v1', 'orders', order.id), orderJson);
  return { docroot, orderJsonBytes: Buffer.byteLength(orderJson), orderProtoBytes: orderProto.length };
}

const GRPC_HEADERS = ['-H', 'content-type: application/grpc', '-H', 'te: trailers'];

export function workloads(work: string, files: Files, calls: number, rate: number): Workload[] {
  // A pod's everyday load: the rate over 8 connections, each with one call at a time.
  const spread = (r: number): string[] => ['-c', '8', '-m', '1', `--rps=${r / 8}`];
  const h2 = (c: number, r: number): Pick<Workload, 'calls' | 'rate' | 'serialCalls' | 'saturation' | 'fixedRate' | 'fixedShape' | 'spread'> => ({
    calls: c,
    rate: r,
    serialCalls: Math.min(3000, Math.round(c / 5)),
    saturation: ['-c', '16', '-m', '10'],
    fixedRate: ['-c', '4', '-m', '10', `--rps=${r / 4}`],
    fixedShape: '4 conn., up to 10 calls each',
    spread: spread(r),
  });
  // HTTP/1.1 has one call at a time per connection (h2load's -m would pipeline): its fixed rate is already the spread shape.
  const h1 = { calls, rate, serialCalls: Math.min(3000, Math.round(calls / 5)), saturation: ['-c', '32', '-m', '1'], fixedRate: spread(rate), fixedShape: '8 conn., 1 call each', spread: spread(rate) };
  return [
    { id: 'grpc-256', title: 'gRPC unary, 256 B messages (h2c)', frontend: 'h2c', upstreamProto: 'h2', path: '/bench.v1.BenchService/Unary', request: ['-d', join(work, 'unary.bin'), ...GRPC_HEADERS], ...h2(calls, rate) },
    { id: 'grpc-256-tls', title: 'gRPC unary, 256 B messages, TLS (ALPN h2) from the client, h2c to the upstream', frontend: 'tls', upstreamProto: 'h2', path: '/bench.v1.BenchService/Unary', request: ['-d', join(work, 'unary.bin'), ...GRPC_HEADERS], ...h2(calls, rate) },
    { id: 'grpc-order', title: `gRPC GetOrder, the 18-field order (${files.orderProtoBytes} B protobuf, ${files.orderJsonBytes} B as JSON) (h2c)`, frontend: 'h2c', upstreamProto: 'h2', path: '/order.v1.OrderService/GetOrder', request: ['-d', join(work, 'get-order.bin'), ...GRPC_HEADERS], ...h2(calls, rate) },
    { id: 'rest-order-h1', title: `REST GET /v1/orders/{id} over HTTP/1.1, the same order as ${files.orderJsonBytes} B of JSON`, frontend: 'h1', upstreamProto: 'h1', path: '/v1/orders/ord-000001', request: ['--h1', '-H', 'accept: application/json'], ...h1 },
    {
      id: 'stream-1000',
      title: `gRPC server stream of ${STREAM_MESSAGES} messages of 256 B (h2c); figures per stream`,
      frontend: 'h2c',
      upstreamProto: 'h2',
      path: '/bench.v1.BenchService/Stream',
      request: ['-d', join(work, 'unary.bin'), ...GRPC_HEADERS],
      ...h2(Math.max(20, Math.round(calls / 100)), Math.max(4, Math.round(rate / 100))),
      serialCalls: Math.max(10, Math.round(calls / 200)),
    },
  ];
}
