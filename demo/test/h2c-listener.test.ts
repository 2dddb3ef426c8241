// The one-port sniffing, from raw sockets, and close() with connections open.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import net from 'node:net';
import { test } from 'node:test';
import { startConnectEcho, startOrderService } from '../src/index.ts';

function rawExchange(port: number, bytes: Buffer, until: (received: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (until(received)) {
        socket.destroy();
        resolve(received);
      }
    });
    socket.on('error', reject);
    // One byte per write, so the sniffer must assemble the preface (or the request line) across reads.
    socket.on('connect', async () => {
      for (const byte of bytes) {
        socket.write(Buffer.of(byte));
        await new Promise((r) => setImmediate(r));
      }
    });
  });
}

test('an HTTP/1.1 request trickled byte by byte is served as HTTP/1.1', async () => {
  const upstream = await startConnectEcho();
  try {
    const response = await rawExchange(
      upstream.port,
      Buffer.from('GET /v1/echo/trickle HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'),
      (r) => r.includes('}'),
    );
    assert.match(response, /^HTTP\/1\.1 200/);
    assert.match(response, /"id":"trickle"/);
  } finally {
    await upstream.close();
  }
});

test('an HTTP/2 preface trickled byte by byte is served as HTTP/2', async () => {
  const upstream = await startConnectEcho();
  try {
    const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    const emptySettings = Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]);
    // The server's first frame is its SETTINGS (type 4 at byte 3), proof that the HTTP/2 side took the socket.
    const response = await rawExchange(upstream.port, Buffer.concat([preface, emptySettings]), (r) => r.length >= 9);
    assert.equal(response.charCodeAt(3), 4);
  } finally {
    await upstream.close();
  }
});

test('close() ends open HTTP/2 streams and idle connections at once', async () => {
  const upstream = await startOrderService({ latencyScale: 0 });
  const session = http2.connect(upstream.url);
  session.on('error', () => {});
  const stream = session.request({
    ':method': 'POST',
    ':path': '/order.v1.OrderService/WatchOrders',
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  stream.end(Buffer.from([0, 0, 0, 0, 0]));
  await new Promise((resolve) => stream.once('data', resolve));
  const idle = net.connect(upstream.port, '127.0.0.1');
  idle.on('error', () => {});
  await new Promise((resolve) => idle.once('connect', resolve));

  const started = performance.now();
  await upstream.close();
  await Promise.all([
    new Promise((resolve) => stream.once('close', resolve)),
    new Promise((resolve) => idle.once('close', resolve)),
  ]);
  assert.ok(performance.now() - started < 1000);
  session.destroy();
});
