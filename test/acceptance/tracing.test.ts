// Tracing through the real binary: with OTEL_EXPORTER_OTLP_ENDPOINT set, each
// call becomes a span that continues the caller's trace, the upstream receives a
// traceparent naming that span, and the span arrives over OTLP/HTTP. Without it,
// the caller's traceparent reaches the upstream untouched.
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: { intValue?: string | number; stringValue?: string } }[];
}

/** An HTTP/2 upstream that answers gRPC-shaped calls and remembers each traceparent. */
async function startUpstream(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    seen.push(String(headers.traceparent));
    stream.on('error', () => {});
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '5' }));
    stream.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

/** A real OTLP/HTTP endpoint: takes the JSON exports the sidecar posts to /v1/traces. */
async function startOtlpReceiver(): Promise<{ url: string; spans: OtlpSpan[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, close: () => new Promise((r) => server.close(() => r())) };
}

function grpcCall(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    const req = session.request({ ':method': 'POST', ':path': '/order.v1.OrderService/GetOrder', 'content-type': 'application/grpc', te: 'trailers', traceparent: CALLER_TRACEPARENT });
    req.on('error', reject);
    req.resume();
    req.on('close', () => {
      session.close();
      resolve();
    });
    req.end(Buffer.from([0, 0, 0, 0, 0]));
  });
}

describe('tracing', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let traced: SidecarProcess;
  let plain: SidecarProcess;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startOtlpReceiver();
    traced = await startSidecarProcess(['--upstream', upstream.url, '--service-name', 'orders-sidecar'], { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '100' });
    plain = await startSidecarProcess(['--upstream', upstream.url]);
  });
  after(async () => {
    await Promise.all([traced.stop(), plain.stop()]);
    await Promise.all([upstream.close(), receiver.close()]);
  });

  it("continues the caller's trace, sends the upstream the sidecar's span, and exports that span", async () => {
    await grpcCall(traced.url);
    const sent = upstream.seen.at(-1)!;
    const [version, traceId, parentId, flags] = sent.split('-');
    assert.deepEqual([version, traceId, flags], ['00', TRACE_ID, '01']);
    assert.notEqual(parentId, CLIENT_SPAN);

    const deadline = Date.now() + 5000;
    while (!receiver.spans.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const span = receiver.spans.find((s) => s.spanId === parentId);
    assert.ok(span, `no exported span with id ${parentId}; got ${JSON.stringify(receiver.spans.map((s) => s.spanId))}`);
    assert.equal(span.traceId, TRACE_ID);
    assert.equal(span.parentSpanId, CLIENT_SPAN);
    assert.equal(span.name, 'order.v1.OrderService/GetOrder');
    const status = span.attributes.find((a) => a.key === 'rpc.grpc.status_code');
    assert.equal(Number(status?.value.intValue), 5);
  });

  it('names REST spans by the route template, as the metrics do: never the raw path with its ids', async () => {
    const paths = ['/v1/orders/12345', '/v1/orders/67890', '/v1/users/3f2b8c1e-9a4d-4e7b-8f00-1c2d3e4f5a6b/cart'];
    const session = http2.connect(traced.url);
    for (const path of paths) {
      await new Promise<void>((resolve, reject) => {
        const req = session.request({ ':method': 'GET', ':path': path, traceparent: CALLER_TRACEPARENT });
        req.on('error', reject);
        req.resume();
        req.on('close', () => resolve());
      });
    }
    session.close();
    const rest = (): OtlpSpan[] => receiver.spans.filter((s) => s.attributes.some((a) => a.key === 'rpcscope.protocol' && a.value.stringValue === 'rest'));
    const deadline = Date.now() + 5000;
    while (rest().length < paths.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(rest().map((s) => s.name).sort(), ['GET /v1/orders/{id}', 'GET /v1/orders/{id}', 'GET /v1/users/{id}/cart']);
    assert.deepEqual([...new Set(rest().map((s) => s.attributes.find((a) => a.key === 'http.route')?.value.stringValue))].sort(), ['/v1/orders/{id}', '/v1/users/{id}/cart']);
  });

  it('is off by default: the traceparent passes through untouched', async () => {
    await grpcCall(plain.url);
    assert.equal(upstream.seen.at(-1), CALLER_TRACEPARENT);
  });
});
