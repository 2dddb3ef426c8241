import assert from 'node:assert/strict';
import { test } from 'node:test';
import { constants } from 'node:http2';
import { CONNECTION_CLOSED } from '../../src/call/call-record.ts';
import { http2ErrorName, resetToGrpcCode } from '../../src/protocol/reset-codes.ts';
import { grpcCodeName } from '../../src/protocol/status-codes.ts';

test('HTTP/2 error names match the codes Node (nghttp2) uses', () => {
  const pairs: [number, string][] = [
    [constants.NGHTTP2_NO_ERROR, 'NO_ERROR'],
    [constants.NGHTTP2_PROTOCOL_ERROR, 'PROTOCOL_ERROR'],
    [constants.NGHTTP2_INTERNAL_ERROR, 'INTERNAL_ERROR'],
    [constants.NGHTTP2_FLOW_CONTROL_ERROR, 'FLOW_CONTROL_ERROR'],
    [constants.NGHTTP2_SETTINGS_TIMEOUT, 'SETTINGS_TIMEOUT'],
    [constants.NGHTTP2_STREAM_CLOSED, 'STREAM_CLOSED'],
    [constants.NGHTTP2_FRAME_SIZE_ERROR, 'FRAME_SIZE_ERROR'],
    [constants.NGHTTP2_REFUSED_STREAM, 'REFUSED_STREAM'],
    [constants.NGHTTP2_CANCEL, 'CANCEL'],
    [constants.NGHTTP2_COMPRESSION_ERROR, 'COMPRESSION_ERROR'],
    [constants.NGHTTP2_CONNECT_ERROR, 'CONNECT_ERROR'],
    [constants.NGHTTP2_ENHANCE_YOUR_CALM, 'ENHANCE_YOUR_CALM'],
    [constants.NGHTTP2_INADEQUATE_SECURITY, 'INADEQUATE_SECURITY'],
    [constants.NGHTTP2_HTTP_1_1_REQUIRED, 'HTTP_1_1_REQUIRED'],
  ];
  for (const [code, name] of pairs) assert.equal(http2ErrorName(code), name);
});

test('an unknown HTTP/2 code is INTERNAL_ERROR; an HTTP/1.1 close is CONNECTION_CLOSED', () => {
  assert.equal(http2ErrorName(0xe), 'INTERNAL_ERROR');
  assert.equal(http2ErrorName(0xffffffff), 'INTERNAL_ERROR');
  assert.equal(http2ErrorName(CONNECTION_CLOSED), 'CONNECTION_CLOSED');
});

test('resets map to the gRPC status clients report', () => {
  const name = (code: number, side: 'client' | 'upstream' | 'proxy' = 'upstream') => grpcCodeName(resetToGrpcCode(code, side));
  assert.equal(name(constants.NGHTTP2_CANCEL), 'CANCELLED');
  assert.equal(name(constants.NGHTTP2_CANCEL, 'client'), 'CANCELLED');
  assert.equal(name(constants.NGHTTP2_REFUSED_STREAM), 'UNAVAILABLE');
  assert.equal(name(constants.NGHTTP2_ENHANCE_YOUR_CALM), 'RESOURCE_EXHAUSTED');
  assert.equal(name(constants.NGHTTP2_INADEQUATE_SECURITY), 'PERMISSION_DENIED');
  for (const code of [0, 1, 2, 3, 4, 5, 6, 9, 10, 13, 0xe]) assert.equal(name(code), 'INTERNAL', String(code));
});

test('an HTTP/1.1 connection closed mid-call: the client gave up, or the other side dropped it', () => {
  assert.equal(grpcCodeName(resetToGrpcCode(CONNECTION_CLOSED, 'client')), 'CANCELLED');
  assert.equal(grpcCodeName(resetToGrpcCode(CONNECTION_CLOSED, 'upstream')), 'UNAVAILABLE');
  assert.equal(grpcCodeName(resetToGrpcCode(CONNECTION_CLOSED, 'proxy')), 'UNAVAILABLE');
});
