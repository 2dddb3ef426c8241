// rpcscope's strict HTTP/1.1 parser against Node's (llhttp, the parser of the
// terminating path and of many apps), on the same bytes over a real socket:
// whatever Node refuses, rpcscope refuses; whatever rpcscope passes on, Node
// reads as the same requests with the same bodies. The shapes rpcscope refuses
// and Node reads are listed, each with why: there the relay is stricter than
// the terminating path, never looser.
import assert from 'node:assert/strict';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { H1Error } from '../../src/h1/h1-error.ts';
import { readRequests } from '../support/h1-read.ts';

const CHUNKED = 'POST /o HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n';

/** Shapes both parsers must read alike: valid messages and pipelines. */
const VALID: Record<string, string> = {
  'a GET': 'GET /orders/7?x=1&y=%20 HTTP/1.1\r\nHost: app\r\nAccept: */*\r\n\r\n',
  'a POST with Content-Length': 'POST /orders HTTP/1.1\r\nHost: app\r\nContent-Length: 11\r\n\r\nhello world',
  'a chunked POST with extensions and trailers': `${CHUNKED}5;a=b\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Sum: 31\r\n\r\n`,
  'codings ending in chunked': 'POST /o HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
  'a pipeline of three': 'GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhiDELETE /3 HTTP/1.1\r\nHost: a\r\n\r\n',
  'an empty line before the request line': '\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n',
  'HTTP/1.0 without Host': 'GET / HTTP/1.0\r\n\r\n',
  'OPTIONS *': 'OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n',
  'field values with obs-text and tabs': 'GET / HTTP/1.1\r\nHost: a\r\nX-Name: caf\xe9\t latte \r\n\r\n',
  'hex chunk sizes in either case': `${CHUNKED}A\r\n0123456789\r\na\r\n0123456789\r\n0\r\n\r\n`,
};

/** Shapes Node refuses: rpcscope must refuse them too. */
const BOTH_REFUSE: Record<string, string> = {
  'Content-Length with Transfer-Encoding': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
  'differing Content-Lengths': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!',
  'the same Content-Length twice': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello',
  'a Content-Length list': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello',
  'a signed Content-Length': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello',
  'an empty Content-Length': 'POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n',
  'codings ending in gzip': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n',
  'chunked twice': `${CHUNKED.replace('\r\n\r\n', '\r\nTransfer-Encoding: chunked\r\n\r\n')}0\r\n\r\n`,
  'a quoted coding': 'POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: "chunked"\r\n\r\n',
  'obs-fold': 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\n 2\r\n\r\n',
  'a bare LF in the head': 'GET / HTTP/1.1\r\nHost: a\nX-A: 1\r\n\r\n',
  'a bare LF ending the head': 'GET / HTTP/1.1\r\nHost: a\r\n\n',
  'a bare CR': 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r2\r\n\r\n',
  'whitespace before a colon': 'GET / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\nhello',
  'a NUL in a value': 'GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\x002\r\n\r\n',
  'no Host in HTTP/1.1': 'GET / HTTP/1.1\r\n\r\n',
  'a raw byte above 0x7e in the target': 'GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n',
  'HTTP/1.2': 'GET / HTTP/1.2\r\nHost: a\r\n\r\n',
  'whitespace after a chunk size': `${CHUNKED}5 \r\nhello\r\n0\r\n\r\n`,
  'whitespace before a chunk extension': `${CHUNKED}5 ;a=b\r\nhello\r\n0\r\n\r\n`,
  'a 0x chunk size': `${CHUNKED}0x5\r\nhello\r\n0\r\n\r\n`,
  'a bare LF after a chunk size': `${CHUNKED}5\nhello\r\n0\r\n\r\n`,
  'chunk data past its size': `${CHUNKED}5\r\nhello!\r\n0\r\n\r\n`,
  'a trailer line without a colon': `${CHUNKED}0\r\nX-A\r\n\r\n`,
  'a folded trailer line': `${CHUNKED}0\r\nX-A: 1\r\n 2\r\n\r\n`,
};

/** Shapes Node reads and rpcscope refuses, with why the relay is stricter there. */
const STRICTER: Record<string, [string, string]> = {
  'Transfer-Encoding in HTTP/1.0': ['POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'HTTP/1.0 has no transfer codings (RFC 9112 §6.1): an HTTP/1.0 app would read the body as close-delimited'],
  'an absolute-form target': ['GET http://other.example/ HTTP/1.1\r\nHost: a\r\n\r\n', 'the sidecar forwards to its one app, not to the host a target names'],
  'two spaces in the request line': ['GET  / HTTP/1.1\r\nHost: a\r\n\r\n', 'RFC 9112 §3 has one SP; a lenient reading differs between parsers'],
  'HTTP/2.0 in a request line': ['GET / HTTP/2.0\r\nHost: a\r\n\r\n', 'HTTP/2 does not come as text: a client saying so is confused'],
  'two Hosts': ['GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 'RFC 9112 §3.2: a request with more than one Host MUST be answered 400'],
  'GET *': ['GET * HTTP/1.1\r\nHost: a\r\n\r\n', 'asterisk-form is for OPTIONS only (RFC 9112 §3.2.4)'],
};

interface NodeRead {
  refused: string | undefined;
  requests: Array<[method: string, url: string, payload: number]>;
}

let server: http.Server;
let port = 0;
/** What Node read on each connection, by the client's local port. */
const reads = new Map<number, NodeRead>();

const readOf = (socket: net.Socket): NodeRead => {
  const key = socket.remotePort ?? 0;
  let r = reads.get(key);
  if (r === undefined) reads.set(key, (r = { refused: undefined, requests: [] }));
  return r;
};

before(async () => {
  server = http.createServer((req, res) => {
    let payload = 0;
    req.on('data', (d: Buffer) => (payload += d.length));
    req.on('end', () => {
      readOf(req.socket).requests.push([req.method ?? '', req.url ?? '', payload]);
      res.end();
    });
  });
  server.on('clientError', (err: Error & { code?: string }, socket) => {
    readOf(socket as net.Socket).refused = err.code ?? 'refused';
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => server.close());

/** Sends `bytes` to Node's server on a connection of its own, and waits for Node to close it. */
async function nodeReads(bytes: string): Promise<NodeRead> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const key = socket.localPort!;
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
  socket.end(Buffer.from(bytes, 'latin1'));
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  // The server's handlers for this connection have run once it closed; a request ended last may still be finishing.
  await new Promise<void>((resolve) => setImmediate(resolve));
  const read = reads.get(key) ?? { refused: undefined, requests: [] };
  // Node answers some refusals itself, before any handler (a missing Host: requireHostHeader).
  if (read.requests.length === 0 && answer.startsWith('HTTP/1.1 400 ')) read.refused ??= 'answered 400';
  return read;
}

function rpcscopeReads(bytes: string): NodeRead {
  try {
    return { refused: undefined, requests: readRequests(Buffer.from(bytes, 'latin1')).map((r) => [r.head.method, r.head.target, r.payload]) };
  } catch (err) {
    if (err instanceof H1Error) return { refused: err.reason, requests: [] };
    throw err;
  }
}

describe('rpcscope reads HTTP/1.1 as Node does, or refuses it', () => {
  for (const [name, bytes] of Object.entries(VALID)) {
    it(`both read ${name} alike`, async () => {
      const node = await nodeReads(bytes);
      assert.equal(node.refused, undefined, `Node refused ${name}`);
      assert.ok(node.requests.length > 0);
      assert.deepEqual(rpcscopeReads(bytes), node);
    });
  }
  for (const [name, bytes] of Object.entries(BOTH_REFUSE)) {
    it(`both refuse ${name}`, async () => {
      const node = await nodeReads(bytes);
      assert.notEqual(node.refused, undefined, `Node read ${name}: ${JSON.stringify(node.requests)}`);
      const ours = rpcscopeReads(bytes);
      assert.notEqual(ours.refused, undefined, `rpcscope read ${name}: ${JSON.stringify(ours.requests)}`);
    });
  }
  for (const [name, [bytes, why]] of Object.entries(STRICTER)) {
    it(`rpcscope alone refuses ${name}: ${why}`, async () => {
      const node = await nodeReads(bytes);
      assert.equal(node.refused, undefined, `Node now refuses ${name} too: move it to BOTH_REFUSE`);
      assert.notEqual(rpcscopeReads(bytes).refused, undefined);
    });
  }
});
