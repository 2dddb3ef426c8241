// Fuzz target: the strict HTTP/1.1 parser the HTTP/1.1 relay reads messages
// with (src/h1/message-head.ts, src/h1/body-reader.ts): a client's bytes read
// as a stream of pipelined requests, heads then bodies, and a response head
// with its framing.
//
// Input: [cut seed] [bytes…]: the bytes are read whole, then in the pieces the
// seed cuts (see piecesOf), as a socket would give them.
//
// Findings: any exception but H1Error (the parser's documented refusal); a
// result (requests, bodies, payloads, or the refusal's reason) that depends on
// how the bytes were cut; heads and bodies that are not the input's own bytes,
// in order; a payload larger than the body that carried it; the one-pass field
// reader (readFields) reading fields otherwise than the checked one.
import assert from 'node:assert/strict';
import { piecesOf, type FuzzTarget } from '../engine.ts';
import { H1Error } from '../../../src/h1/h1-error.ts';
import { HeadReader, parseResponseHead, responseFraming, readFields, readFieldsChecked } from '../../../src/h1/message-head.ts';
import { readRequests } from '../../support/h1-read.ts';

type Outcome = { refused: string } | { reads: Array<[string, string, string, number]> };

function outcome(bytes: Buffer, cuts: number[]): Outcome {
  try {
    const reads = readRequests(bytes, cuts);
    return { reads: reads.map((r) => [r.head.raw.toString('latin1'), r.head.framing.kind, r.body.toString('latin1'), r.payload]) };
  } catch (err) {
    if (err instanceof H1Error) return { refused: err.reason };
    throw err;
  }
}

function cutsOf(bytes: Buffer, seed: number): number[] {
  const cuts: number[] = [];
  let at = 0;
  for (const p of piecesOf(bytes, seed)) cuts.push((at += p.length));
  return cuts;
}

export const target: FuzzTarget = {
  maxLength: 2048,
  run(data) {
    if (data.length === 0) return;
    const bytes = data.subarray(1);
    const whole = outcome(bytes, []);
    assert.deepEqual(outcome(bytes, cutsOf(bytes, data[0]!)), whole, 'the result depends on how the bytes were cut');
    if ('reads' in whole) {
      const text = bytes.toString('latin1');
      let at = 0;
      for (const [head, , body, payload] of whole.reads) {
        const h = text.indexOf(head, at);
        // Only empty lines may come before a head.
        assert.ok(h >= at && /^(?:\r\n)*$/u.test(text.slice(at, h)), 'a head is not the next bytes of the input');
        at = h + head.length;
        assert.equal(text.slice(at, at + body.length), body, 'a body is not the bytes after its head');
        at += body.length;
        assert.ok(payload <= body.length, 'a payload larger than its body');
      }
    }
    // The same bytes as a response head, framed for a GET.
    const reader = new HeadReader(16 * 1024);
    try {
      if (reader.read(bytes, 0) >= 0) {
        const raw = reader.take();
        // Fields the one-pass reader reads are those the reading that checks each step apart gives.
        const at = raw.indexOf(0x0a) + 1;
        const fast = readFields(raw, at);
        if (fast !== undefined) assert.deepEqual(fast, readFieldsChecked(raw, at, false), 'readFields and readFieldsChecked differ');
        responseFraming(parseResponseHead(raw), 'GET');
      }
    } catch (err) {
      if (!(err instanceof H1Error)) throw err;
    }
  },
  seeds: [
    '\x07GET / HTTP/1.1\r\nHost: a\r\n\r\n',
    '\x03POST /orders HTTP/1.1\r\nHost: app\r\nContent-Length: 13\r\n\r\n{"item":"42"}GET /1 HTTP/1.1\r\nHost: a\r\n\r\n',
    '\x05PUT /o HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5;n=x\r\nhello\r\n10\r\n0123456789abcdef\r\n0\r\nX-Sum: 9\r\n\r\n',
    '\x02\r\nOPTIONS * HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
    '\x01HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc',
    '\x04GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n',
  ].map((s) => Buffer.from(s, 'latin1')),
  dictionary: [
    'GET ', 'POST ', 'HEAD ', 'CONNECT ', ' HTTP/1.1\r\n', ' HTTP/1.0\r\n', 'HTTP/1.1 200 OK\r\n', '\r\n', '\r\n\r\n', '\n', '\r', ': ', ', ', ';', ' ',
    'Host: a\r\n', 'Content-Length: ', 'Transfer-Encoding: ', 'chunked', 'gzip', 'Connection: ', 'close', 'keep-alive', 'Upgrade', 'Expect: 100-continue',
    '0\r\n\r\n', 'ffffffffffffffff', '0x', '\t', '\x00', '\xff',
  ].map((s) => Buffer.from(s, 'latin1')),
};
