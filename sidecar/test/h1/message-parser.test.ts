// The strict HTTP/1.1 parser the HTTP/1.1 relay reads messages with: what it
// reads from a well-formed stream of messages however the socket cuts it, and
// each smuggling shape it refuses with the status a client is answered with.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BodyReader } from '../../src/h1/body-reader.ts';
import { H1Error, type H1Reason } from '../../src/h1/h1-error.ts';
import { HeadReader, parseResponseHead, responseFraming } from '../../src/h1/message-head.ts';
import { MAX, readRequests, type Read } from '../support/h1-read.ts';

function refusal(bytes: string): { reason: H1Reason; status: number } {
  try {
    readRequests(Buffer.from(bytes, 'latin1'));
  } catch (err) {
    assert.ok(err instanceof H1Error, `not an H1Error: ${String(err)}`);
    assert.equal(err.code, 'RPCSCOPE_ERR_H1_MESSAGE');
    return { reason: err.reason, status: err.status };
  }
  assert.fail(`accepted: ${JSON.stringify(bytes)}`);
}

const PIPELINE = Buffer.from(
  '\r\n' + // an empty line before a request line is skipped (RFC 9112 §2.2)
    'POST /orders HTTP/1.1\r\nHost: app\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"item":"42"}' +
    'PUT /orders/7 HTTP/1.1\r\nHost: app\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;note=x\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-Checksum: 9\r\n\r\n' +
    'GET /orders/7?verbose=1 HTTP/1.1\r\nHost:app\r\nConnection: close\r\nExpect: 100-continue\r\nUpgrade: websocket\r\n\r\n',
  'latin1',
);

describe('the HTTP/1.1 parser reads pipelined requests', () => {
  it('reads each head and body in order, with framing, keep-alive and field offsets', () => {
    const reads = readRequests(PIPELINE);
    assert.deepEqual(
      reads.map((r) => [r.head.method, r.head.target, r.head.framing.kind, r.head.keepAlive, r.body.toString('latin1')]),
      [
        ['POST', '/orders', 'length', true, '{"item":"42"}'],
        ['PUT', '/orders/7', 'chunked', true, '5;note=x\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-Checksum: 9\r\n\r\n'],
        ['GET', '/orders/7?verbose=1', 'none', false, ''],
      ],
    );
    const [post, , get] = reads as [Read, Read, Read];
    // Each field line is where its offsets say, so a relay can drop a line and pass the rest as it came.
    for (const f of post.head.fields) assert.match(post.head.raw.toString('latin1', f.start, f.end), new RegExp(`^${f.name}:.*\\r\\n$`, 'iu'));
    assert.equal(post.head.raw.toString('latin1').split('\r\n')[0], 'POST /orders HTTP/1.1');
    assert.deepEqual(post.head.fields.map((f) => [f.name, f.value]), [['host', 'app'], ['content-type', 'application/json'], ['content-length', '13']]);
    assert.equal(get.head.expectContinue, true);
    // Upgrade is asked for only with Connection: upgrade.
    assert.equal(get.head.upgrade, undefined);
    assert.equal(readRequests(Buffer.from('GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n'))[0]!.head.upgrade, 'websocket');
  });

  it('reads the same however the socket cuts the bytes: at every offset, and one byte at a time', () => {
    const whole = readRequests(PIPELINE).map((r) => [r.head.raw.toString('latin1'), r.body.toString('latin1')]);
    for (let cut = 1; cut < PIPELINE.length; cut++) {
      const split = readRequests(PIPELINE, [cut]).map((r) => [r.head.raw.toString('latin1'), r.body.toString('latin1')]);
      assert.deepEqual(split, whole, `cut at ${cut}`);
    }
    const bytewise = readRequests(PIPELINE, Array.from({ length: PIPELINE.length }, (_, i) => i)).map((r) => [r.head.raw.toString('latin1'), r.body.toString('latin1')]);
    assert.deepEqual(bytewise, whole);
  });

  it('counts the payload of a chunked body without its framing', () => {
    const body = new BodyReader(MAX);
    body.begin({ kind: 'chunked' });
    const bytes = Buffer.from('5\r\nhello\r\nA;x="y"\r\n0123456789\r\n0\r\n\r\nGET', 'latin1');
    const end = body.read(bytes, 0);
    assert.equal(body.done, true);
    assert.equal(body.payload, 15);
    assert.equal(bytes.toString('latin1', end), 'GET', 'the next message starts where the body ends');
  });

  it('hands over the payload slices of a chunked body, in any cut, without its framing', () => {
    const bytes = Buffer.from('5\r\nhello\r\nA;x="y"\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n', 'latin1');
    for (let cut = 0; cut <= bytes.length; cut++) {
      const body = new BodyReader(MAX);
      const slices: Buffer[] = [];
      body.onPayload = (s) => slices.push(Buffer.from(s));
      body.begin({ kind: 'chunked' });
      body.read(bytes.subarray(0, cut), 0);
      body.read(bytes.subarray(cut), 0);
      assert.equal(body.done, true, `cut at ${cut}`);
      assert.equal(Buffer.concat(slices).toString('latin1'), 'hello0123456789', `cut at ${cut}`);
    }
  });

  it('HTTP/1.0 keeps the connection only with Connection: keep-alive', () => {
    assert.equal(readRequests(Buffer.from('GET / HTTP/1.0\r\n\r\n'))[0]!.head.keepAlive, false);
    assert.equal(readRequests(Buffer.from('GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n'))[0]!.head.keepAlive, true);
  });
});

describe('the HTTP/1.1 parser refuses what two parsers could read two ways', () => {
  const cases: Array<[string, string, H1Reason, number]> = [
    ['Content-Length with Transfer-Encoding', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'cl_and_te', 400],
    ['differing Content-Lengths', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', 'content_length', 400],
    ['a signed Content-Length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello', 'content_length', 400],
    ['an empty Content-Length', 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n', 'content_length', 400],
    ['codings not ending in chunked', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n', 'transfer_encoding', 400],
    ['chunked twice', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n', 'transfer_encoding', 400],
    ['a transfer coding that is not a token', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "chunked"\r\n\r\n', 'transfer_encoding', 400],
    ['Transfer-Encoding in HTTP/1.0', 'POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'transfer_encoding', 400],
    ['obs-fold', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n', 'obs_fold', 400],
    ['a bare LF ending a field line', 'GET / HTTP/1.1\r\nHost: a\nX-A: 1\r\n\r\n', 'bare_lf', 400],
    ['a bare LF ending the head', 'GET / HTTP/1.1\r\nHost: a\r\n\n', 'bare_lf', 400],
    ['a bare CR inside a field value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n', 'bare_cr', 400],
    ['whitespace before the colon', 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello', 'field_name', 400],
    ['a NUL in a field value', 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x002\r\n\r\n', 'field_value', 400],
    ['an absolute-form target', 'GET http://other.example/ HTTP/1.1\r\nHost: a\r\n\r\n', 'absolute_form', 400],
    ['CONNECT', 'CONNECT app:443 HTTP/1.1\r\nHost: app:443\r\n\r\n', 'connect', 405],
    ['two spaces in the request line', 'GET  / HTTP/1.1\r\nHost: a\r\n\r\n', 'request_line', 400],
    ['HTTP/2.0 over an HTTP/1.1 connection', 'GET / HTTP/2.0\r\nHost: a\r\n\r\n', 'version', 505],
    ['no Host in HTTP/1.1', 'GET / HTTP/1.1\r\n\r\n', 'host', 400],
    ['two Hosts', 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 'host', 400],
    ['whitespace after the chunk size', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n0\r\n\r\n', 'chunk_size', 400],
    ['a chunk size with a 0x prefix', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n', 'chunk_size', 400],
    ['a chunk size of 16 hex digits', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n', 'chunk_size', 400],
    ['a chunk size line ending in a bare LF', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n', 'chunk_size', 400],
    ['chunk data longer than its size', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello!\r\n0\r\n\r\n', 'chunk_end', 400],
    ['a trailer line without a colon', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-A\r\n\r\n', 'trailer', 400],
    ['a folded trailer line', 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-A: 1\r\n 2\r\n\r\n', 'trailer', 400],
  ];
  for (const [name, bytes, reason, status] of cases) {
    it(`${name}: ${status} (${reason})`, () => {
      assert.deepEqual(refusal(bytes), { reason, status });
    });
  }

  it('a head over the limit: 431, however it arrives', () => {
    const big = `GET / HTTP/1.1\r\nHost: a\r\nX-Big: ${'x'.repeat(MAX)}\r\n\r\n`;
    assert.deepEqual(refusal(big), { reason: 'head_too_large', status: 431 });
    assert.throws(() => readRequests(Buffer.from(big), [10, 100, 1000, 10_000]), (e: unknown) => e instanceof H1Error && e.status === 431);
  });

  it('an asterisk-form target only for OPTIONS', () => {
    assert.equal(readRequests(Buffer.from('OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n'))[0]!.head.target, '*');
    assert.deepEqual(refusal('GET * HTTP/1.1\r\nHost: a\r\n\r\n'), { reason: 'request_line', status: 400 });
  });
});

describe('responses', () => {
  const head = (text: string) => {
    const reader = new HeadReader(MAX);
    const bytes = Buffer.from(text, 'latin1');
    assert.equal(reader.read(bytes, 0), bytes.length);
    return parseResponseHead(reader.take());
  };

  it('frame their bodies by the request method and status (RFC 9112 §6.3)', () => {
    const table: Array<[string, string, string]> = [
      ['HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n', 'GET', 'length'],
      ['HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n', 'HEAD', 'none'],
      ['HTTP/1.1 204 No Content\r\n\r\n', 'DELETE', 'none'],
      ['HTTP/1.1 304 Not Modified\r\nContent-Length: 12\r\n\r\n', 'GET', 'none'],
      ['HTTP/1.1 100 Continue\r\n\r\n', 'POST', 'none'],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', 'GET', 'chunked'],
      ['HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n', 'GET', 'close'],
      ['HTTP/1.0 200 OK\r\n\r\n', 'GET', 'close'],
      ['HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n', 'GET', 'none'],
    ];
    for (const [text, method, kind] of table) assert.equal(responseFraming(head(text), method).kind, kind, `${JSON.stringify(text)} to ${method}`);
  });

  it('reads status, reason and keep-alive', () => {
    const h = head('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\r\n');
    assert.deepEqual([h.status, h.reason, h.keepAlive], [503, 'Service Unavailable', false]);
  });

  it('refuse what cannot be relayed as the app meant it: 502', () => {
    for (const text of ['HTTP/1.1 20 OK\r\n\r\n', 'HTTP/1.1 200OK\r\n\r\n', 'ICY 200 OK\r\n\r\n']) {
      assert.throws(() => head(text), (e: unknown) => e instanceof H1Error && e.status === 502, text);
    }
    assert.throws(() => responseFraming(head('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n'), 'GET'), (e: unknown) => e instanceof H1Error && e.status === 502);
    assert.throws(() => responseFraming(head('HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n'), 'GET'), (e: unknown) => e instanceof H1Error && e.status === 502);
  });
});
