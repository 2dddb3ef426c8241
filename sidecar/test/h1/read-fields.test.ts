// The HTTP/1.1 relay reads every head's fields with a one-pass reader
// (readFields) that gives up on any byte it does not expect, and the head is
// then read again by the reading that checks each step apart and names the
// fault (readFieldsChecked). These tests hold the two to the same fields on
// every head the first reads (names, values, offsets), and the first to read
// every well-formed head.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { H1Error } from '../../src/h1/h1-error.ts';
import { parseRequestHead, readFields, readFieldsChecked } from '../../src/h1/message-head.ts';

function checked(raw: Buffer, at: number, request: boolean): unknown {
  try {
    return readFieldsChecked(raw, at, request);
  } catch (err) {
    if (err instanceof H1Error) return { refused: err.reason };
    throw err;
  }
}

const head = (text: string): Buffer => Buffer.from(text, 'latin1');
/** Where a head's field lines start: past its start line. */
const fieldsAt = (raw: Buffer): number => raw.indexOf(0x0a) + 1;

describe('readFields', () => {
  it('reads names in any case as their lowercase, values without surrounding whitespace, with each line\'s offsets', () => {
    const raw = head('GET /v1/orders/42 HTTP/1.1\r\nHOST: app:8080\r\nUser-Agent:curl/8\r\nX-Custom-Thing: \t a b \t\r\nAccept:\r\nTE:  trailers\r\n\r\n');
    const fields = readFields(raw, fieldsAt(raw));
    assert.ok(fields !== undefined, 'read in one pass');
    assert.deepEqual(
      fields.map((f) => [f.name, f.value, raw.toString('latin1', f.start, f.end)]),
      [
        ['host', 'app:8080', 'HOST: app:8080\r\n'],
        ['user-agent', 'curl/8', 'User-Agent:curl/8\r\n'],
        ['x-custom-thing', 'a b', 'X-Custom-Thing: \t a b \t\r\n'],
        ['accept', '', 'Accept:\r\n'],
        ['te', 'trailers', 'TE:  trailers\r\n'],
      ],
    );
  });

  it('gives up on a malformed line, which the checked reading refuses with its reason, as the parser does', () => {
    const cases: Array<[string, string]> = [
      ['GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n', 'obs_fold'],
      ['GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n', 'bare_cr'],
      ['GET / HTTP/1.1\r\nHost a\r\n\r\n', 'field_name'],
      ['GET / HTTP/1.1\r\nHo st: a\r\n\r\n', 'field_name'],
      ['GET / HTTP/1.1\r\n: a\r\n\r\n', 'field_name'],
      ['GET / HTTP/1.1\r\nHost: a\x00b\r\n\r\n', 'field_value'],
      ['GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n', 'field_value'],
    ];
    for (const [text, reason] of cases) {
      const raw = head(text);
      assert.equal(readFields(raw, fieldsAt(raw)), undefined, JSON.stringify(text));
      assert.deepEqual(checked(raw, fieldsAt(raw), true), { refused: reason }, JSON.stringify(text));
      assert.throws(() => parseRequestHead(raw), (err) => err instanceof H1Error && err.reason === reason, JSON.stringify(text));
    }
  });

  it('reads every well-formed head, and any head it reads as the checked reading does', () => {
    // Field lines from pieces a parser could read two ways: names in mixed case (known and not), separators,
    // whitespace at either end of a value, control bytes, obs-text, and CR or LF alone.
    const piece = fc.constantFrom('Host', 'HOST', 'content-length', 'Content-Type', 'Connection', 'TE', 'x-a', 'X', 'Accept-Ranges', 'Transfer-Encoding');
    const byte = fc.constantFrom(':', ' ', '\t', 'a', 'Z', '0', ',', ';', '"', '\r', '\n', '\x00', '\x7f', '\x80', '\xff', '=', '/', '(');
    const line = fc.tuple(fc.option(piece, { nil: '' }), fc.array(byte, { maxLength: 6 }), fc.array(byte, { maxLength: 6 })).map(([name, a, b]) => `${name}${a.join('')}${b.join('')}\r\n`);
    const wellFormed = fc.tuple(piece, fc.constantFrom('', ' ', '\t ', '  '), fc.stringMatching(/^[ -~\x80-\xff\t]{0,12}$/u)).map(([name, ows, value]) => `${name}:${ows}${value}\r\n`);
    const raw = (lines: string[], request: boolean): Buffer => head(`${request ? 'GET / HTTP/1.1' : 'HTTP/1.1 200 OK'}\r\n${lines.join('')}\r\n`);
    fc.assert(
      fc.property(fc.array(wellFormed, { maxLength: 8 }), fc.boolean(), (lines, request) => {
        const r = raw(lines, request);
        const fast = readFields(r, fieldsAt(r));
        assert.ok(fast !== undefined, `a well-formed head not read in one pass: ${JSON.stringify(r.toString('latin1'))}`);
        assert.deepEqual(fast, checked(r, fieldsAt(r), request));
      }),
      { numRuns: 5_000, seed: 20261205 },
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(line, wellFormed, wellFormed), { maxLength: 8 }), fc.boolean(), (lines, request) => {
        const r = raw(lines, request);
        const fast = readFields(r, fieldsAt(r));
        if (fast !== undefined) assert.deepEqual(fast, checked(r, fieldsAt(r), request));
      }),
      { numRuns: 20_000, seed: 20261205 },
    );
  });
});
