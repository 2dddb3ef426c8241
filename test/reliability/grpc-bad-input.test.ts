// Malformed gRPC and HTTP/2 requests against the real `sidecar/bin/rpcscope`,
// on the data plane RPCSCOPE_DATA_PLANE names (relay by default, terminate):
// length prefixes that lie, deadline headers that do not parse, content types
// nobody registered, and paths that are not UTF-8. A proxy is not the endpoint:
// what the gRPC spec leaves to the server (a truncated message, an unknown
// codec) reaches the app byte for byte and its answer reaches the client; what
// the sidecar reads for itself (the deadline, the labels) it reads without
// failing the call, and counts. Each case checks what the app received, what
// the client was answered, /metrics, and that the sidecar is alive.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { FLAG, FRAME, PREFACE, frame, literal, readFrames, requestBlock, settings, type ReadFrame } from '../support/h2-frames.ts';
import { parseExposition, sum, type Matchers } from '../support/metrics-text.ts';
import { rawConnect } from '../support/raw-client.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

interface Received {
  path: Buffer;
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** A gRPC envelope (PROTOCOL-HTTP2.md "Length-Prefixed-Message") whose length field says `claimed`, over `payload`. */
function envelope(claimed: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(claimed, 1);
  return Buffer.concat([head, payload]);
}

/** Whether `body` is a sequence of whole messages, as a gRPC server checks before it decodes any. */
function wholeMessages(body: Buffer): boolean {
  let o = 0;
  while (o + 5 <= body.length) o += 5 + body.readUInt32BE(o + 1);
  return o === body.length;
}

/** The answer that lies: a message claiming 4 GiB with 16 bytes behind it, then status OK in the trailers. */
const LYING_ANSWER = envelope(0xffffffff, Buffer.alloc(16, 7));

/**
 * An h2c app that keeps each request's raw :path octets, headers and body. gRPC
 * requests are echoed and end with grpc-status 0, or 13 when the body is not whole
 * messages (what grpc-go and C-core answer a truncated message); /test.Echo/Lie
 * answers LYING_ANSWER. Anything else is answered 200 `ok`.
 */
async function startApp(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('error', () => {});
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      const path = String(headers[':path']);
      received.push({ path: Buffer.from(path, 'latin1'), headers, body });
      if (!String(headers['content-type'] ?? '').startsWith('application/grpc')) {
        stream.respond({ ':status': 200, 'content-type': 'text/plain' });
        stream.end('ok');
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      const whole = wholeMessages(body);
      stream.on('wantTrailers', () => stream.sendTrailers(whole ? { 'grpc-status': '0' } : { 'grpc-status': '13', 'grpc-message': 'incomplete message' }));
      stream.end(path === '/test.Echo/Lie' ? LYING_ANSWER : whole ? body : undefined);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface Answer {
  status: number;
  body: Buffer;
  trailers: http2.IncomingHttpHeaders;
  rstCode: number;
}

/** One request on a fresh connection; what came back, however the stream ended. */
function call(url: string, headers: http2.OutgoingHttpHeaders, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    session.on('error', reject);
    const req = session.request({ ':method': 'POST', ...headers });
    const answer: Answer = { status: 0, body: Buffer.alloc(0), trailers: {}, rstCode: 0 };
    const chunks: Buffer[] = [];
    req.on('response', (h) => (answer.status = Number(h[':status'])));
    req.on('trailers', (t) => (answer.trailers = t));
    req.on('data', (d: Buffer) => chunks.push(d));
    req.on('error', () => {});
    req.on('close', () => {
      answer.body = Buffer.concat(chunks);
      answer.rstCode = req.rstCode ?? 0;
      session.close();
      resolve(answer);
    });
    req.end(body);
  });
}

const grpcHeaders = (path: string, extra: http2.OutgoingHttpHeaders = {}): http2.OutgoingHttpHeaders => ({ ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...extra });

describe(`rpcscope binary and malformed gRPC requests (${process.env.RPCSCOPE_DATA_PLANE ?? 'relay'})`, () => {
  let app: Awaited<ReturnType<typeof startApp>>;
  let sc: SidecarProcess;
  before(async () => {
    app = await startApp();
    sc = await startSidecarProcess(['--upstream', app.url, '--enforce-deadlines']);
  });
  after(async () => {
    await sc.stop();
    await app.close();
  });

  const metrics = async (): Promise<{ bytes: Buffer; count(name: string, where?: Matchers): number }> => {
    const bytes = Buffer.from(await (await fetch(`${sc.adminUrl}/metrics`)).arrayBuffer());
    const samples = parseExposition(bytes.toString('utf8'));
    return { bytes, count: (name, where = {}) => sum(samples, name, where) };
  };
  const receivedAt = (path: string): Received[] => app.received.filter((r) => r.path.equals(Buffer.from(path, 'latin1')));

  it('relays messages whose length prefix lies, both ways, byte for byte, and records the app’s status', async () => {
    // The request claims 1 MiB and carries 10 bytes; the answer claims 4 GiB and carries 16.
    const short = envelope(1 << 20, Buffer.from('ten bytes!'));
    const truncated = await call(sc.url, grpcHeaders('/test.Echo/Truncated'), short);
    assert.equal(truncated.trailers['grpc-status'], '13', 'the app judged the truncated message, as a gRPC server does');
    assert.equal(truncated.trailers['grpc-message'], 'incomplete message');
    assert.deepEqual(receivedAt('/test.Echo/Truncated').map((r) => r.body), [short], 'the app received the lying envelope unchanged');

    const lie = await call(sc.url, grpcHeaders('/test.Echo/Lie'), envelope(3, Buffer.from('abc')));
    assert.equal(lie.status, 200);
    assert.deepEqual(lie.body, LYING_ANSWER, 'the client received the lying answer unchanged, not held for 4 GiB');
    assert.equal(lie.trailers['grpc-status'], '0');

    const m = await metrics();
    assert.equal(m.count('rpcscope_calls_total', { protocol: 'grpc', method: 'test.Echo/Truncated', code: 'INTERNAL' }), 1);
    assert.equal(m.count('rpcscope_calls_total', { protocol: 'grpc', method: 'test.Echo/Lie', code: 'OK' }), 1);
    // A message is counted when its last byte passed: the truncated request and the lying answer never complete.
    assert.equal(m.count('rpcscope_messages_total', { method: 'test.Echo/Truncated' }), 0);
    assert.equal(m.count('rpcscope_messages_total', { method: 'test.Echo/Lie', flow: 'request' }), 1);
    assert.equal(m.count('rpcscope_messages_total', { method: 'test.Echo/Lie', flow: 'response' }), 0);
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
  });

  it('passes a grpc-timeout that does not parse on unchanged, counts it, and enforces no deadline from it', async () => {
    // PROTOCOL-HTTP2.md: TimeoutValue is 1 to 8 ASCII digits, TimeoutUnit one of H M S m u n.
    const invalid = ['abc', '123456789S', '10', '-5m', '1.5S', '5s'];
    for (const value of invalid) {
      const msg = envelope(4, Buffer.from(value.padEnd(4, '.').slice(0, 4)));
      const answer = await call(sc.url, grpcHeaders('/test.Echo/BadTimeout', { 'grpc-timeout': value }), msg);
      assert.equal(answer.trailers['grpc-status'], '0', `grpc-timeout ${JSON.stringify(value)}: the call is answered by the app`);
    }
    assert.deepEqual(receivedAt('/test.Echo/BadTimeout').map((r) => r.headers['grpc-timeout']), invalid, 'the app received every value as sent');
    const m = await metrics();
    assert.equal(m.count('rpcscope_deadline_header_invalid_total', { protocol: 'grpc' }), invalid.length);
    assert.equal(m.count('rpcscope_calls_without_deadline_total', { method: 'test.Echo/BadTimeout' }), invalid.length, 'proxied as if it carried none');
    assert.equal(m.count('rpcscope_calls_total', { method: 'test.Echo/BadTimeout', code: 'OK' }), invalid.length);
    assert.equal(m.count('rpcscope_deadline_exceeded_total', { method: 'test.Echo/BadTimeout' }), 0);
  });

  it('carries content types nobody registered as what their media type says, never refusing them', async () => {
    // `application/grpc+<codec>` is gRPC with another codec; `application/grpcfoo` is not gRPC at all.
    const cases: [contentType: string, protocol: string][] = [
      ['application/grpc+made-up-codec', 'grpc'],
      ['application/grpcfoo', 'rest'],
      ['application/x-made-up', 'rest'],
      ['not a media type at all', 'rest'],
    ];
    const msg = envelope(2, Buffer.from('hi'));
    for (const [contentType] of cases) {
      const answer = await call(sc.url, { ':path': '/test.Echo/Typed', 'content-type': contentType, te: 'trailers' }, msg);
      assert.equal(answer.status, 200, `${contentType}: answered by the app`);
    }
    assert.deepEqual(receivedAt('/test.Echo/Typed').map((r) => r.headers['content-type']), cases.map(([t]) => t));
    const m = await metrics();
    assert.equal(m.count('rpcscope_calls_total', { protocol: 'grpc', method: 'test.Echo/Typed', code: 'OK' }), 1);
    assert.equal(m.count('rpcscope_calls_total', { protocol: 'rest', code: 'OK', method: (v) => v.includes('test.Echo') }), 3);
  });

  it('serves paths that are not UTF-8 without putting their octets in a label', async () => {
    // Over raw frames, so the octets are exactly these: latin1 é, then 0xff 0xfe, in a REST path and in a gRPC one.
    const restPath = '/caf\u00e9/\u00ff\u00fe';
    const grpcPath = '/test.Echo/\u00ff\u00fe';
    const c = await rawConnect(sc.port);
    c.socket.write(
      Buffer.concat([
        PREFACE,
        settings(),
        frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, requestBlock(restPath)),
        frame(FRAME.HEADERS, FLAG.END_HEADERS, 3, requestBlock(grpcPath, 'POST', [literal('content-type', 'application/grpc'), literal('te', 'trailers')])),
        frame(FRAME.DATA, FLAG.END_STREAM, 3, envelope(0, Buffer.alloc(0))),
      ]),
    );
    const ended = (frames: ReadFrame[], id: number): boolean => frames.some((f) => f.streamId === id && (f.type === FRAME.RST_STREAM || (f.flags & FLAG.END_STREAM) !== 0));
    for (let i = 0; i < 100 && !(ended(readFrames(c.received()), 1) && ended(readFrames(c.received()), 3)); i++) await new Promise((r) => setTimeout(r, 50));
    const frames = readFrames(c.received());
    c.socket.destroy();
    assert.ok(ended(frames, 1) && ended(frames, 3), 'both streams were answered');
    // The app's own HTTP/2 layer (nghttp2) accepts octets 0x80-0xff in :path, so the sidecar passes them on as they are.
    assert.equal(receivedAt(restPath).length, 1, 'the REST path reached the app octet for octet');
    assert.equal(receivedAt(grpcPath).length, 1, 'the gRPC path reached the app octet for octet');

    // Over HTTP/1.1 the request target is RFC 3986 octets only: the parser (llhttp, strict)
    // refuses the request with 400, it is never forwarded, and it counts as a bad request.
    const h1 = await rawConnect(sc.port);
    h1.socket.write(Buffer.from(`GET /caf\u00e9/h1/\u00ff HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`, 'latin1'));
    await Promise.race([h1.closed, new Promise((r) => setTimeout(r, 5000))]);
    assert.match(h1.received().toString('latin1'), /^HTTP\/1\.1 400 /);
    assert.ok(h1.closedAt !== undefined, 'the connection was closed');
    assert.equal(app.received.filter((r) => r.path.includes(Buffer.from('/h1/'))).length, 0, 'the app never saw it');

    const m = await metrics();
    assert.doesNotThrow(() => new TextDecoder('utf-8', { fatal: true }).decode(m.bytes), '/metrics is valid UTF-8, as Prometheus requires');
    const lines = m.bytes.toString('utf8').split('\n').filter((l) => l.startsWith('rpcscope_calls_total'));
    assert.ok(lines.length > 0);
    for (const line of lines) assert.doesNotMatch(line, /[^\x20-\x7e]|caf|\\x/, `a label holds no octet of the path: ${line}`);
    assert.equal(m.count('rpcscope_connections_terminated_total', { reason: 'bad_request' }), 1, 'the HTTP/1.1 request, and only it');
    assert.equal(m.count('rpcscope_calls_total', { protocol: 'grpc', method: '_OTHER' }), 1, 'the gRPC call with a path that is no method is counted under _OTHER');
    assert.equal(sc.proc.exitCode, null, 'rpcscope is alive');
  });
});
