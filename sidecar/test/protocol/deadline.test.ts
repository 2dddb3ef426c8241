import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseConnectTimeoutMs, parseDeadlineHeader, parseGrpcTimeout } from '../../src/protocol/deadline.ts';

test('grpc-timeout: every unit, in milliseconds', () => {
  assert.equal(parseGrpcTimeout('2H'), 7_200_000);
  assert.equal(parseGrpcTimeout('3M'), 180_000);
  assert.equal(parseGrpcTimeout('5S'), 5_000);
  assert.equal(parseGrpcTimeout('250m'), 250);
  assert.equal(parseGrpcTimeout('1500u'), 1.5);
  assert.equal(parseGrpcTimeout('2000000n'), 2);
  assert.equal(parseGrpcTimeout('99999999S'), 99_999_999_000);
  assert.equal(parseGrpcTimeout('0n'), 0);
});

test('grpc-timeout: anything but 1-8 digits and one unit is invalid', () => {
  for (const bad of ['', 'S', '100', '123456789S', '1.5S', '-1S', '+1S', '10s', '10ms', ' 10S', '10S ', '1e3m', '10 S', '１０S']) {
    assert.equal(parseGrpcTimeout(bad), undefined, JSON.stringify(bad));
  }
});

test('connect-timeout-ms: up to 10 digits of milliseconds', () => {
  assert.equal(parseConnectTimeoutMs('0'), 0);
  assert.equal(parseConnectTimeoutMs('1500'), 1500);
  assert.equal(parseConnectTimeoutMs('9999999999'), 9_999_999_999);
  for (const bad of ['', '12345678901', '1.5', '-5', '5ms', ' 5', '0x10']) {
    assert.equal(parseConnectTimeoutMs(bad), undefined, JSON.stringify(bad));
  }
});

test('parseDeadlineHeader picks the parser by header', () => {
  assert.equal(parseDeadlineHeader('grpc-timeout', '5S'), 5000);
  assert.equal(parseDeadlineHeader('grpc-timeout', '5000'), undefined);
  assert.equal(parseDeadlineHeader('connect-timeout-ms', '5000'), 5000);
  assert.equal(parseDeadlineHeader('connect-timeout-ms', '5S'), undefined);
});
