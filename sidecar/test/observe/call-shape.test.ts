import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callShape } from '../../src/observe/call-shape.ts';
import { endedCall } from './records.ts';

test('without a descriptor, message counts decide', () => {
  assert.equal(callShape(endedCall({ requestMessages: 1, responseMessages: 1 }), undefined), 'unary');
  assert.equal(callShape(endedCall({ requestMessages: 1, responseMessages: 0 }), undefined), 'unary');
  assert.equal(callShape(endedCall({ requestMessages: 1, responseMessages: 5 }), undefined), 'server_streaming');
  assert.equal(callShape(endedCall({ requestMessages: 5, responseMessages: 1 }), undefined), 'client_streaming');
  assert.equal(callShape(endedCall({ requestMessages: 2, responseMessages: 2 }), undefined), 'bidi_streaming');
});

test('the descriptor wins over the counts, both ways', () => {
  assert.equal(callShape(endedCall({ requestMessages: 1, responseMessages: 1 }), 'server_streaming'), 'server_streaming');
  assert.equal(callShape(endedCall({ requestMessages: 3, responseMessages: 3 }), 'unary'), 'unary');
});

test('REST and unframed Connect are unary', () => {
  assert.equal(callShape(endedCall({ protocol: 'rest', framed: false }), undefined), 'unary');
  assert.equal(callShape(endedCall({ protocol: 'connect', framed: false }), undefined), 'unary');
  assert.equal(callShape(endedCall({ protocol: 'connect', framed: true, requestMessages: 1, responseMessages: 3 }), undefined), 'server_streaming');
});
