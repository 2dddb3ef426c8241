import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GrpcCode, connectCodeToGrpcCode, grpcCodeName, restStatusToGrpcCode, rpcHttpStatusToGrpcCode } from '../../src/protocol/status-codes.ts';

const NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED',
];

test('gRPC code names by wire number, as docs/metrics.md lists them', () => {
  NAMES.forEach((name, code) => assert.equal(grpcCodeName(code), name));
  assert.equal(GrpcCode.UNAUTHENTICATED, 16);
});

test('a code outside the table is UNKNOWN', () => {
  for (const n of [17, 99, -1, 1.5, Number.NaN]) assert.equal(grpcCodeName(n), 'UNKNOWN');
});

test('REST: HTTP status to code by the docs/metrics.md (google.rpc.Code) table', () => {
  const table: [number, string][] = [
    [200, 'OK'], [201, 'OK'], [204, 'OK'], [301, 'OK'], [304, 'OK'],
    [400, 'INVALID_ARGUMENT'], [401, 'UNAUTHENTICATED'], [403, 'PERMISSION_DENIED'], [404, 'NOT_FOUND'],
    [409, 'ABORTED'], [412, 'FAILED_PRECONDITION'], [429, 'RESOURCE_EXHAUSTED'], [499, 'CANCELLED'],
    [500, 'INTERNAL'], [501, 'UNIMPLEMENTED'], [503, 'UNAVAILABLE'], [504, 'DEADLINE_EXCEEDED'],
    [405, 'FAILED_PRECONDITION'], [418, 'FAILED_PRECONDITION'], [422, 'FAILED_PRECONDITION'],
    [502, 'UNKNOWN'], [507, 'UNKNOWN'], [599, 'UNKNOWN'], [101, 'UNKNOWN'], [0, 'UNKNOWN'],
  ];
  for (const [status, name] of table) assert.equal(grpcCodeName(restStatusToGrpcCode(status)), name, String(status));
});

test('gRPC family without a status: the http-grpc-status-mapping table', () => {
  const table: [number, string][] = [
    [400, 'INTERNAL'], [401, 'UNAUTHENTICATED'], [403, 'PERMISSION_DENIED'], [404, 'UNIMPLEMENTED'],
    [429, 'UNAVAILABLE'], [502, 'UNAVAILABLE'], [503, 'UNAVAILABLE'], [504, 'UNAVAILABLE'],
    [200, 'UNKNOWN'], [500, 'UNKNOWN'], [0, 'UNKNOWN'],
  ];
  for (const [status, name] of table) assert.equal(grpcCodeName(rpcHttpStatusToGrpcCode(status)), name, String(status));
});

test('Connect code strings: snake_case names, with the one-l "canceled"', () => {
  NAMES.slice(1).forEach((name, i) => {
    const connect = name === 'CANCELLED' ? 'canceled' : name.toLowerCase();
    assert.equal(connectCodeToGrpcCode(connect), i + 1, connect);
  });
  assert.equal(connectCodeToGrpcCode('cancelled'), GrpcCode.UNKNOWN);
  assert.equal(connectCodeToGrpcCode('NOT_FOUND'), GrpcCode.UNKNOWN);
  assert.equal(connectCodeToGrpcCode('ok'), GrpcCode.UNKNOWN);
});
