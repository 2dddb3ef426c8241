// Fuzz target: what the sidecar's own code does with a client's first bytes and
// an HTTP/1.1 request head. Node's llhttp parses the head; this harness splits it
// no more leniently than llhttp does and hands the pieces on as Node would:
// the first-bytes sniff (src/listen/sniff.ts), the hop-by-hop filter and header
// object building (src/protocol/hop-by-hop.ts), the header list size
// (src/h2/header-list-size.ts), protocol detection (src/protocol/detect.ts),
// the deadline header (src/protocol/deadline-header.ts) and the path labels
// (src/route/rpc-method.ts, src/route/learned-template.ts).
//
// Input: [options] [client bytes…]. Options: the cut seed of the bytes (see
// piecesOf), bit 3 `keepUpgrade`, bit 4 `firstOfSingle`.
//
// Findings: any exception (none of these functions documents one); a sniff that
// decides more than once, before it can, wrongly, or without putting every byte
// back; a hop-by-hop field or one the Connection field names that survives
// (RFC 9110 §7.6.1), or any other field dropped or changed; a header object with
// other than lower-case names and string values; a detection that contradicts itself.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { piecesOf, type FuzzTarget } from '../engine.ts';
import { H2_PREFACE, sniffHttpVersion } from '../../../src/listen/sniff.ts';
import { fieldsFromRaw, filterRawHeaders } from '../../../src/protocol/hop-by-hop.ts';
import { headerListSize } from '../../../src/h2/header-list-size.ts';
import { detect, isGrpcFamily } from '../../../src/protocol/detect.ts';
import { readDeadline } from '../../../src/protocol/deadline-header.ts';
import { rpcMethodFromPath } from '../../../src/route/rpc-method.ts';
import { learnTemplate } from '../../../src/route/learned-template.ts';

const HOP_BY_HOP = new Set(['connection', 'proxy-connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'te', 'trailer', 'http2-settings']);
const PROTOCOLS = new Set(['grpc', 'grpc_web', 'connect', 'rest', 'trpc']);
const ENCODINGS = new Set(['proto', 'json', 'text', 'other']);
const TRPC_PREFIX = '/trpc';

/** The parts of a socket the sniff uses, with what it did to them. */
class SniffedSocket extends EventEmitter {
  paused = false;
  putBack: Buffer[] = [];
  pause(): this {
    this.paused = true;
    return this;
  }
  unshift(bytes: Buffer): void {
    this.putBack.push(bytes);
  }
  destroy(): this {
    assert.fail('the sniff destroyed a socket without a timeout');
  }
}

/** Feeds the bytes in pieces until the sniff decides; whether it chose HTTP/2. */
function sniff(bytes: Buffer, seed: number): boolean | undefined {
  const socket = new SniffedSocket();
  let decided: boolean | undefined;
  let fed = 0;
  sniffHttpVersion(socket as unknown as Socket, (h2) => {
    assert.equal(decided, undefined, 'decided twice');
    assert.ok(socket.paused, 'decided with the socket flowing');
    decided = h2;
  });
  for (const piece of piecesOf(bytes, seed)) {
    if (decided !== undefined) break;
    socket.emit('data', piece);
    fed += piece.length;
  }
  const n = Math.min(bytes.length, H2_PREFACE.length);
  const prefix = bytes.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
  if (prefix && n < H2_PREFACE.length) {
    assert.equal(decided, undefined, 'decided on part of the preface');
    return undefined;
  }
  assert.equal(decided, prefix, `decided ${decided ? 'HTTP/2' : 'HTTP/1.1'}`);
  assert.deepEqual(Buffer.concat(socket.putBack), bytes.subarray(0, fed), 'not every byte read was put back');
  return decided;
}

// RFC 9110 §5.6.2 tokens; field values without control characters but HTAB, as llhttp takes them.
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const REQUEST_LINE = new RegExp(`^(${TOKEN}) ([\\x21-\\x7e\\x80-\\xff]+) HTTP/1\\.[01]$`);
const FIELD_LINE = new RegExp(`^(${TOKEN}):[ \\t]*([^\\x00-\\x08\\x0a-\\x1f\\x7f]*?)[ \\t]*$`);

interface Head {
  method: string;
  target: string;
  raw: string[];
}

function parseHead(text: string): Head | undefined {
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [line, ...fields] = text.slice(0, end).split('\r\n');
  const r = REQUEST_LINE.exec(line!);
  if (!r) return undefined;
  const raw: string[] = [];
  for (const f of fields) {
    const m = FIELD_LINE.exec(f);
    if (!m) return undefined;
    raw.push(m[1]!, m[2]!);
  }
  return { method: r[1]!, target: r[2]!, raw };
}

/** Node's `req.headers`: lower-case names, a repeated content-type's first value, others joined. */
function headerObject(raw: readonly string[]): Record<string, string> {
  const headers = new Map<string, string>();
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    const seen = headers.get(name);
    if (seen === undefined) headers.set(name, raw[i + 1]!);
    else if (name !== 'content-type') headers.set(name, `${seen}, ${raw[i + 1]}`);
  }
  return Object.fromEntries(headers);
}

function checkFilter(raw: readonly string[], keepUpgrade: boolean): string[] {
  const kept = filterRawHeaders(raw, keepUpgrade);
  assert.equal(kept.length % 2, 0);
  const named = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') continue;
    // `close` is a connection option, never a field to look for.
    for (const t of raw[i + 1]!.split(',')) if (t.trim() !== '' && t.trim().toLowerCase() !== 'close') named.add(t.trim().toLowerCase());
  }
  let k = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const lower = raw[i]!.toLowerCase();
    const here = k < kept.length && kept[k] === raw[i];
    if (keepUpgrade && (lower === 'connection' || lower === 'upgrade')) {
      assert.ok(here && kept[k + 1] === raw[i + 1], `${raw[i]} not kept for an upgrade`);
    } else if (lower === 'te') {
      // TE goes on as `trailers` when that is one of its codings (hop-by-hop.ts reads `trailers;q=…` so too), the one HTTP/2 allows.
      const trailers = raw[i + 1]!.split(',').some((c) => c.trim().toLowerCase().split(';')[0] === 'trailers');
      if (!trailers) continue;
      assert.ok(here && kept[k + 1] === 'trailers', `te: ${raw[i + 1]} not forwarded as trailers`);
    } else if (HOP_BY_HOP.has(lower) || named.has(lower)) {
      assert.ok(!(here && kept[k + 1] === raw[i + 1]), `hop-by-hop ${raw[i]} forwarded`);
      continue;
    } else {
      assert.ok(here && kept[k + 1] === raw[i + 1], `end-to-end field ${raw[i]}: ${raw[i + 1]} dropped or changed`);
    }
    if (here) k += 2;
  }
  assert.equal(k, kept.length, 'fields forwarded that the client did not send');
  return kept;
}

function checkFields(raw: readonly string[], kept: readonly string[], firstOfSingle: boolean): void {
  const out: Record<string, string | string[]> = {};
  fieldsFromRaw(raw, out, firstOfSingle);
  const values = new Map<string, string[]>();
  for (let i = 0; i < kept.length; i += 2) {
    const name = kept[i]!.toLowerCase();
    values.set(name, [...(values.get(name) ?? []), kept[i + 1]!]);
  }
  assert.deepEqual(Object.keys(out).sort(), [...values.keys()].sort(), 'the header object has other names than the fields forwarded');
  for (const [name, v] of Object.entries(out)) {
    assert.ok(typeof v === 'string' || (Array.isArray(v) && v.length >= 2 && v.every((s) => typeof s === 'string')), `header ${name} as ${String(v)}`);
    const got = typeof v === 'string' ? [v] : v;
    if (firstOfSingle) assert.equal(got[0], values.get(name)![0]);
    else assert.deepEqual(got, values.get(name), `header ${name}: values lost or reordered`);
  }
}

function checkRequest(head: Head, headers: Record<string, string>): void {
  const q = head.target.indexOf('?');
  const bare = q < 0 ? head.target : head.target.slice(0, q);
  const query = q < 0 ? '' : head.target.slice(q + 1);
  const connectVersion = headers['connect-protocol-version'];
  const d = detect(head.method, headers['content-type'], connectVersion, query, bare, TRPC_PREFIX);
  assert.ok(PROTOCOLS.has(d.protocol) && ENCODINGS.has(d.encoding), `detected ${d.protocol} ${d.encoding}`);
  if (d.base64) assert.ok(d.protocol === 'grpc_web' && d.framed && d.encoding === 'text', 'base64 but not gRPC-Web text');
  if (d.framed) assert.ok(isGrpcFamily(d.protocol), `${d.protocol} framed`);
  assert.equal(d.trpc !== undefined, d.protocol === 'trpc');
  if (d.trpc) assert.ok(bare.startsWith(`${TRPC_PREFIX}/`) && d.trpc.procedures.length > 0);
  if (connectVersion !== undefined && head.method !== 'GET' && !d.framed) assert.equal(d.protocol, 'connect');
  const deadline = readDeadline(d.protocol, headers);
  if (deadline?.ms !== undefined) assert.ok(Number.isFinite(deadline.ms) && deadline.ms >= 0, `deadline ${deadline.ms} ms`);
  const rpc = rpcMethodFromPath(bare);
  if (rpc !== undefined) assert.equal(`/${rpc}`, bare);
  const template = learnTemplate(bare);
  if (template !== undefined) assert.equal(learnTemplate(template), template, 'a learned template learns again');
}

export const target: FuzzTarget = {
  maxLength: 2048,
  run(data) {
    if (data.length === 0) return;
    const options = data[0]!;
    const bytes = data.subarray(1);
    if (sniff(bytes, options) !== false) return;
    const head = parseHead(bytes.toString('latin1'));
    // llhttp would answer 400; the listener refuses targets other than origin-form and `OPTIONS *`.
    if (!head || (head.target[0] !== '/' && !(head.target === '*' && head.method === 'OPTIONS'))) return;
    let size = 0;
    for (const s of head.raw) size += s.length;
    const headers = headerObject(head.raw);
    assert.equal(headerListSize(headers, head.raw), size + (head.raw.length / 2) * 32);
    // fieldsFromRaw filters as for a plain request.
    const kept = checkFilter(head.raw, false);
    if (options & 8) checkFilter(head.raw, true);
    checkFields(head.raw, kept, (options & 16) !== 0);
    checkRequest(head, headers);
  },
  seeds: [
    '\x07GET / HTTP/1.1\r\nHost: a\r\n\r\n',
    '\x03POST /shop.v1.Shop/GetItem HTTP/1.1\r\nHost: a\r\nContent-Type: application/grpc-web-text\r\nTE: trailers\r\nConnection: keep-alive, TE\r\ngrpc-timeout: 10S\r\nX-Trace: 1\r\nX-Trace: 2\r\n\r\n',
    '\x05GET /shop.v1.Shop/GetItem?connect=v1&encoding=json&message=%7B%7D HTTP/1.1\r\nHost: a\r\nconnect-timeout-ms: 250\r\n\r\n',
    '\x04POST /trpc/user.get%2Cuser.list?batch=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n',
    '\x0fGET /v1/items/3f2504e0-4f89-11d3-9a0c-0305e82c3301/42 HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, X-Private\r\nUpgrade: websocket\r\nX-Private: 1\r\nKeep-Alive: timeout=5\r\n\r\n',
    '\x17POST /x HTTP/1.0\r\nContent-Type: application/connect+json\r\nconnect-protocol-version: 1\r\nProxy-Connection: keep-alive\r\n\r\n',
    '\x01PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00',
    '\x02OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n',
  ].map((s) => Buffer.from(s, 'latin1')),
  dictionary: [
    'GET ', 'POST ', 'OPTIONS ', ' HTTP/1.1\r\n', '\r\n', '\r\n\r\n', ': ', ', ', ';', '?', '&', '=', '%2C', '/trpc/', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    'Connection: ', 'Upgrade', 'Keep-Alive', 'Transfer-Encoding', 'TE', 'trailers', 'Trailer', 'Proxy-Connection', 'HTTP2-Settings', 'close', 'Host',
    'content-type: ', 'application/grpc', 'application/grpc-web-text', 'application/grpc-web+json', 'application/connect+proto', 'application/json', '+json',
    'connect-protocol-version: 1', 'grpc-timeout: ', 'connect-timeout-ms: ', 'connect=v1', 'encoding=json', 'batch=1',
    // Names an object keyed by field names must not confuse with its own properties.
    'constructor', '__proto__', 'toString', 'hasOwnProperty',
  ].map((s) => Buffer.from(s, 'latin1')),
};
