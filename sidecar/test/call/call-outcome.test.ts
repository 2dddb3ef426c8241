import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CONNECTION_CLOSED } from '../../src/call/call-record.ts';
import { decideCode, deadlineDetection, endingReset } from '../../src/call/call-outcome.ts';
import { endedCall } from '../observe/records.ts';

const grpcTimeout = (ms: number) => ({ header: 'grpc-timeout' as const, raw: `${ms}m`, ms });

describe('decideCode per protocol', () => {
  test('gRPC and gRPC-Web: grpc-status wins, else the status mapping of the HTTP status', () => {
    assert.equal(decideCode(endedCall({ httpStatus: 200, grpcStatus: 0 })), 'OK');
    assert.equal(decideCode(endedCall({ httpStatus: 200, grpcStatus: 5 })), 'NOT_FOUND');
    assert.equal(decideCode(endedCall({ protocol: 'grpc_web', httpStatus: 200, grpcStatus: 7 })), 'PERMISSION_DENIED');
    assert.equal(decideCode(endedCall({ httpStatus: 503 })), 'UNAVAILABLE');
    assert.equal(decideCode(endedCall({ httpStatus: 404 })), 'UNIMPLEMENTED');
    assert.equal(decideCode(endedCall({ httpStatus: 200 })), 'UNKNOWN');
    assert.equal(decideCode(endedCall({ httpStatus: 200, grpcStatus: 42 })), 'UNKNOWN');
  });

  test('Connect: the error code, the end-stream message, else the HTTP status', () => {
    const unary = { protocol: 'connect' as const, framed: false, encoding: 'json' as const };
    assert.equal(decideCode(endedCall({ ...unary, httpStatus: 200 })), 'OK');
    assert.equal(decideCode(endedCall({ ...unary, httpStatus: 404, connectCode: 'not_found' })), 'NOT_FOUND');
    assert.equal(decideCode(endedCall({ ...unary, httpStatus: 499, connectCode: 'canceled' })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ ...unary, httpStatus: 502 })), 'UNAVAILABLE');
    assert.equal(decideCode(endedCall({ ...unary, httpStatus: 500 })), 'UNKNOWN');
    const stream = { protocol: 'connect' as const, framed: true };
    assert.equal(decideCode(endedCall({ ...stream, httpStatus: 200, connectEndStream: true })), 'OK');
    assert.equal(decideCode(endedCall({ ...stream, httpStatus: 200, connectEndStream: true, connectCode: 'resource_exhausted' })), 'RESOURCE_EXHAUSTED');
    assert.equal(decideCode(endedCall({ ...stream, httpStatus: 200 })), 'UNKNOWN');
  });

  test('REST: the HTTP table; no status at all is UNKNOWN', () => {
    const rest = { protocol: 'rest' as const, framed: false, encoding: 'json' as const, httpMethod: 'GET', path: '/v1/orders/1' };
    assert.equal(decideCode(endedCall({ ...rest, httpStatus: 204 })), 'OK');
    assert.equal(decideCode(endedCall({ ...rest, httpStatus: 404 })), 'NOT_FOUND');
    assert.equal(decideCode(endedCall({ ...rest, httpStatus: 504 })), 'DEADLINE_EXCEEDED');
    assert.equal(decideCode(endedCall({ ...rest, httpStatus: 0 })), 'UNKNOWN');
  });
});

describe('decideCode precedence', () => {
  test('a passed deadline beats the upstream status and the reset', () => {
    assert.equal(decideCode(endedCall({ ms: 150, deadline: grpcTimeout(100), httpStatus: 200, grpcStatus: 0 })), 'DEADLINE_EXCEEDED');
    assert.equal(decideCode(endedCall({ ms: 150, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } })), 'DEADLINE_EXCEEDED');
    assert.equal(decideCode(endedCall({ ms: 100, deadline: grpcTimeout(100), httpStatus: 200, grpcStatus: 0 })), 'OK');
  });

  test('proxy enforcement is DEADLINE_EXCEEDED even when the clock says otherwise', () => {
    assert.equal(decideCode(endedCall({ ms: 5, deadlineEnforced: true, reset: { side: 'proxy', code: 8 } })), 'DEADLINE_EXCEEDED');
  });

  test('an unparsable deadline is no deadline', () => {
    assert.equal(decideCode(endedCall({ ms: 5000, deadline: { header: 'grpc-timeout', raw: 'soon', ms: undefined }, grpcStatus: 0 })), 'OK');
  });

  test('a reset beats the status; an HTTP/1.1 close depends on who closed', () => {
    assert.equal(decideCode(endedCall({ reset: { side: 'upstream', code: 7 } })), 'UNAVAILABLE');
    assert.equal(decideCode(endedCall({ reset: { side: 'client', code: 8 }, grpcStatus: 0 })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ reset: { side: 'upstream', code: 11 } })), 'RESOURCE_EXHAUSTED');
    const rest = { protocol: 'rest' as const, httpVersion: '1.1' as const };
    assert.equal(decideCode(endedCall({ ...rest, reset: { side: 'client', code: CONNECTION_CLOSED } })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ ...rest, reset: { side: 'upstream', code: CONNECTION_CLOSED }, httpStatus: 200 })), 'UNAVAILABLE');
  });

  test('NO_ERROR after the response completed is early closure, not the outcome', () => {
    const call = endedCall({ reset: { side: 'upstream', code: 0 }, grpcStatus: 0, httpStatus: 200 });
    assert.equal(endingReset(call), undefined);
    assert.equal(decideCode(call), 'OK');
    const early = endedCall({ reset: { side: 'upstream', code: 0 }, httpStatus: 200 });
    assert.deepEqual(endingReset(early), { side: 'upstream', code: 0 });
    assert.equal(decideCode(early), 'INTERNAL');
  });

  test('an unreachable upstream is UNAVAILABLE, below deadline and reset', () => {
    assert.equal(decideCode(endedCall({ upstreamUnreachable: true, httpStatus: 502 })), 'UNAVAILABLE');
    assert.equal(decideCode(endedCall({ upstreamUnreachable: true, protocol: 'rest', httpStatus: 502 })), 'UNAVAILABLE');
    assert.equal(decideCode(endedCall({ upstreamUnreachable: true, ms: 200, deadline: grpcTimeout(100) })), 'DEADLINE_EXCEEDED');
  });
});

describe('deadlineDetection', () => {
  test('defined exactly when the code is DEADLINE_EXCEEDED', () => {
    const cases = [
      endedCall({ grpcStatus: 0 }),
      endedCall({ grpcStatus: 4 }),
      endedCall({ ms: 150, deadline: grpcTimeout(100), grpcStatus: 0 }),
      endedCall({ ms: 50, deadline: grpcTimeout(100), grpcStatus: 4 }),
      endedCall({ ms: 150, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } }),
      endedCall({ ms: 50, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } }),
      endedCall({ deadlineEnforced: true }),
      endedCall({ upstreamUnreachable: true }),
      endedCall({ protocol: 'rest', httpStatus: 504 }),
    ];
    for (const call of cases) assert.equal(deadlineDetection(call) !== undefined, decideCode(call) === 'DEADLINE_EXCEEDED');
  });

  test('who noticed, most direct witness first', () => {
    assert.equal(deadlineDetection(endedCall({ deadlineEnforced: true, ms: 150, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } })), 'proxy');
    assert.equal(deadlineDetection(endedCall({ ms: 150, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } })), 'client_cancel');
    assert.equal(deadlineDetection(endedCall({ ms: 150, deadline: grpcTimeout(100), protocol: 'rest', httpVersion: '1.1', reset: { side: 'client', code: CONNECTION_CLOSED } })), 'client_cancel');
    assert.equal(deadlineDetection(endedCall({ ms: 150, deadline: grpcTimeout(100), grpcStatus: 4 })), 'status');
    assert.equal(deadlineDetection(endedCall({ ms: 50, deadline: grpcTimeout(100), grpcStatus: 4 })), 'status');
    assert.equal(deadlineDetection(endedCall({ grpcStatus: 4 })), 'status');
    assert.equal(deadlineDetection(endedCall({ protocol: 'connect', framed: false, httpStatus: 504, connectCode: 'deadline_exceeded' })), 'status');
    assert.equal(deadlineDetection(endedCall({ ms: 150, deadline: grpcTimeout(100), grpcStatus: 0 })), 'late_response');
    assert.equal(deadlineDetection(endedCall({ ms: 150, deadline: grpcTimeout(100), reset: { side: 'upstream', code: 2 } })), 'late_response');
  });
});

describe('a client giving up at its own deadline', () => {
  // Its clock started before the request reached the sidecar: its reset arrives a
  // little before the deadline as the sidecar measures it.
  test('a client reset within the slack of the deadline is DEADLINE_EXCEEDED, detected by client_cancel', () => {
    for (const [ms, budget] of [[96, 100], [80, 100], [950, 1000], [9_100, 10_000]] as const) {
      const call = endedCall({ ms, deadline: grpcTimeout(budget), reset: { side: 'client', code: 2 } });
      assert.equal(decideCode(call), 'DEADLINE_EXCEEDED', `${ms} of ${budget}`);
      assert.equal(deadlineDetection(call), 'client_cancel');
    }
  });

  test('an earlier client reset, or one from the upstream, is not a deadline miss', () => {
    assert.equal(decideCode(endedCall({ ms: 60, deadline: grpcTimeout(100), reset: { side: 'client', code: 8 } })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ ms: 8_900, deadline: grpcTimeout(10_000), reset: { side: 'client', code: 8 } })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ ms: 97, deadline: grpcTimeout(100), reset: { side: 'upstream', code: 8 } })), 'CANCELLED');
    assert.equal(decideCode(endedCall({ ms: 97, deadline: grpcTimeout(100), grpcStatus: 0 })), 'OK');
  });
});
