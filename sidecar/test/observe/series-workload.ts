// The series-budget workload: what one busy sidecar has seen, as call records.
// 100 gRPC methods, each answered with 3 status codes (OK, NOT_FOUND,
// UNAVAILABLE: a success, a caller's error, a server fault), and 20 REST routes
// answered 200, a few calls each, inbound, unary, none with a deadline (the
// `deadlines` option below adds some): the shape docs/metrics.md "Detail
// levels and cost" is sized against.
import type { CallRecord } from '../../src/call/call-record.ts';
import { endedCall } from './records.ts';

export const GRPC_METHODS = 100;
export const GRPC_CODES = [0, 5, 14] as const;
export const REST_ROUTES = 20;

/** `shop.v1.Catalog4/GetItem042`: ten services of ten methods. */
export function grpcPath(i: number): string {
  return `/shop.v1.Catalog${Math.floor(i / 10)}/GetItem${String(i).padStart(3, '0')}`;
}

/**
 * `methods`: fewer gRPC methods, for fleets sized for their number of targets
 * rather than their series (test/fleet/sharded-remote-write.test.ts).
 * `deadlines`: on every other method two calls in three carry a deadline
 * (`grpc-timeout`, 1 s, or 50 ms, which the slower calls miss), as a fleet
 * whose callers set some: 2 deadline histograms more for each such method
 * (test/fleet/series-fleet.ts --deadlines).
 */
export function workloadCalls(methods = GRPC_METHODS, opts: { deadlines?: boolean } = {}): CallRecord[] {
  const calls: CallRecord[] = [];
  for (let i = 0; i < methods; i++) {
    for (const [k, code] of GRPC_CODES.entries()) {
      for (let n = 0; n < 3; n++) {
        const budget = opts.deadlines === true && i % 2 === 0 && n > 0 ? (n === 1 ? 1000 : 50) : undefined;
        calls.push(endedCall({
          deadline: budget === undefined ? undefined : { header: 'grpc-timeout', raw: budget === 1000 ? '1S' : '50m', ms: budget },
          path: grpcPath(i), httpStatus: 200, grpcStatus: code, requestMessages: 1, responseMessages: code === 0 ? 1 : 0,
          requestBytes: 60 + i, responseBytes: code === 0 ? 700 + 40 * i : 0, ms: 1 + ((i + k * 7 + n) % 90),
          upstreamStartTime: 1000.05, upstreamEndTime: 1000.5 + ((i + n) % 90), upstream: `10.0.0.${1 + (i % 3)}:50051`,
        }));
      }
    }
  }
  for (let r = 0; r < REST_ROUTES; r++) {
    for (let n = 0; n < 3; n++) {
      calls.push(endedCall({
        protocol: 'rest', framed: false, encoding: 'json', httpVersion: '1.1', httpMethod: r % 2 ? 'GET' : 'POST',
        path: `/v1/catalog/section${r}/items/${1000 + n}`, httpStatus: 200, requestBytes: r % 2 ? 0 : 300, responseBytes: 2000 + r,
        ms: 2 + n, upstreamStartTime: 1000.05, upstreamEndTime: 1001 + n, upstream: '10.0.0.1:8080',
      }));
    }
  }
  return calls;
}
