import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldsFromRaw, filterH2Headers, filterRawHeaders } from '../../src/protocol/hop-by-hop.ts';
import { headerBag } from '../../src/relay/relay-stream.ts';

describe('filterRawHeaders', () => {
  it('drops hop-by-hop headers and those named by Connection, keeping case and order', () => {
    const raw = ['Host', 'a.example', 'Connection', 'keep-alive, X-Hop', 'X-Hop', '1', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked', 'X-End', '2', 'Upgrade', 'websocket', 'Proxy-Connection', 'close'];
    assert.deepEqual(filterRawHeaders(raw), ['Host', 'a.example', 'X-End', '2']);
  });

  it('keeps te only as trailers', () => {
    assert.deepEqual(filterRawHeaders(['TE', 'trailers, deflate']), ['TE', 'trailers']);
    assert.deepEqual(filterRawHeaders(['TE', 'gzip']), []);
  });

  it('keeps Connection and Upgrade for a WebSocket hand-shake', () => {
    assert.deepEqual(filterRawHeaders(['Connection', 'Upgrade', 'Upgrade', 'websocket'], true), ['Connection', 'Upgrade', 'Upgrade', 'websocket']);
  });
});

describe('filterH2Headers', () => {
  it('drops pseudo-headers and connection-specific fields, keeps te: trailers', () => {
    const out: Record<string, string | string[]> = {};
    filterH2Headers({ ':path': '/x', ':method': 'POST', te: 'trailers', 'content-type': 'application/grpc', 'keep-alive': '1', 'set-cookie': ['a', 'b'] }, out);
    assert.deepEqual(out, { te: 'trailers', 'content-type': 'application/grpc', 'set-cookie': ['a', 'b'] });
  });
});

describe('header objects built from a client\'s field names', () => {
  it('keep `constructor` and `__proto__` as fields, never as Object.prototype\'s (found by the fuzzer)', () => {
    const out: Record<string, string | string[]> = {};
    fieldsFromRaw(['Constructor', 'x', '__proto__', 'y', 'constructor', 'z', 'X-A', '1'], out);
    assert.deepEqual(Object.entries(out), [['constructor', ['x', 'z']], ['__proto__', 'y'], ['x-a', '1']]);
    assert.equal(Object.getPrototypeOf(out), Object.prototype, 'the prototype is untouched');
    const bag = headerBag(['constructor', 'x', '__proto__', 'y', 'constructor', 'z']);
    assert.deepEqual(Object.entries(bag), [['constructor', ['x', 'z']], ['__proto__', 'y']]);
  });
});
