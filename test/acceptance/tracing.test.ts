// Tracing through the real binary: with OTEL_EXPORTER_OTLP_ENDPOINT set, each
// call becomes a span that continues the caller's trace, the upstream receives a
// traceparent naming that span, and the span arrives over OTLP/HTTP. Without it,
// the caller's traceparent reaches the upstream untouched.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startOtlpReceiver, type OtlpSpan } from '../support/otlp-receiver.ts';
import { startPrometheus } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${TRACE_ID}-${CLIENT_SPAN}-01`;

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

function grpcCall(url: string, traceparent = CALLER_TRACEPARENT): Promise<void> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url);
    const req = session.request({ ':method': 'POST', ':path': '/order.v1.OrderService/GetOrder', 'content-type': 'application/grpc', te: 'trailers', ...(traceparent ? { traceparent } : {}) });
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
    traced = await startSidecarProcess(['--upstream', upstream.url, '--service-name', 'orders-sidecar'], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging,team=checkout%20core',
      POD_NAME: 'orders-5c8d-x2k9q',
    });
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
    // The current RPC conventions: the status by name, the system; not the deprecated numeric rpc.grpc.status_code.
    const attribute = (key: string): string | undefined => span.attributes.find((a) => a.key === key)?.value.stringValue;
    assert.equal(attribute('rpc.status_code'), 'NOT_FOUND');
    assert.equal(attribute('rpc.system.name'), 'grpc');
    assert.equal(attribute('rpc.method'), 'order.v1.OrderService/GetOrder');
    assert.equal(span.attributes.find((a) => a.key === 'rpc.grpc.status_code'), undefined);
    assert.equal(attribute('server.address'), '127.0.0.1');
    assert.equal(Number(span.attributes.find((a) => a.key === 'server.port')?.value.intValue), Number(new URL(upstream.url).port));
  });

  it('describes the sidecar by --service-name, OTEL_RESOURCE_ATTRIBUTES and the pod, on the spans resource', () => {
    const resource = Object.fromEntries(receiver.spanResources.at(-1)!.map((a) => [a.key, a.value.stringValue]));
    assert.equal(resource['service.name'], 'orders-sidecar');
    assert.equal(resource['deployment.environment.name'], 'staging');
    assert.equal(resource.team, 'checkout core');
    assert.equal(resource['k8s.pod.name'], 'orders-5c8d-x2k9q');
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
    // HTTP's conventions, not RPC's: the method and the status the caller got.
    for (const span of rest()) {
      assert.equal(span.attributes.find((a) => a.key === 'http.request.method')?.value.stringValue, 'GET');
      assert.equal(Number(span.attributes.find((a) => a.key === 'http.response.status_code')?.value.intValue), 200);
      assert.equal(span.attributes.find((a) => a.key === 'rpc.status_code'), undefined);
    }
  });

  it('gives a Prometheus with exemplar storage the traces of its calls as latency exemplars', async () => {
    const prom = await startPrometheus({ targets: [{ address: new URL(traced.adminUrl).host, labels: { sidecar: 'traced' } }], features: ['exemplar-storage'] });
    try {
      const start = Date.now() / 1000 - 1;
      // Calls without a traceparent: each gets a trace of the sidecar's own, so an
      // exemplar with such a trace names one of these calls (the earlier tests' calls
      // share the caller's trace). Calls go on until Prometheus has one: it scrapes
      // every second, and a bucket's exemplar changes at most once a second.
      let exemplars: { labels: Record<string, string>; value: string }[] = [];
      const ours = (e: { labels: Record<string, string> }): boolean => e.labels.trace_id !== TRACE_ID;
      const until = Date.now() + 20_000;
      while (!exemplars.some(ours) && Date.now() < until) {
        await grpcCall(traced.url, '');
        await new Promise((r) => setTimeout(r, 200));
        const found = await prom.queryExemplars('rpcscope_call_duration_seconds_bucket', start, Date.now() / 1000 + 1);
        exemplars = found.flatMap((s) => s.exemplars);
      }
      assert.ok(exemplars.some(ours), `Prometheus stored no exemplar naming this test's calls: ${JSON.stringify(exemplars)}`);
      // The same scrapes stored the counters, whose OpenMetrics family names drop _total.
      assert.ok((await prom.waitForData('rpcscope_calls_total{sidecar="traced"}')).length > 0);

      const spanDeadline = Date.now() + 5000;
      const exported = (e: { labels: Record<string, string> }): boolean => receiver.spans.some((s) => s.traceId === e.labels.trace_id && s.spanId === e.labels.span_id);
      while (!exemplars.every(exported) && Date.now() < spanDeadline) await new Promise((r) => setTimeout(r, 50));
      for (const e of exemplars) {
        assert.match(e.labels.trace_id ?? '', /^[0-9a-f]{32}$/);
        assert.ok(exported(e), `exemplar ${JSON.stringify(e.labels)} names no span the sidecar exported`);
        assert.ok(Number(e.value) > 0 && Number(e.value) < 5, `exemplar value ${e.value} is not a call latency in seconds`);
      }
    } finally {
      await prom.stop();
    }
  });

  it('is off by default: the traceparent passes through untouched', async () => {
    await grpcCall(plain.url);
    assert.equal(upstream.seen.at(-1), CALLER_TRACEPARENT);
  });
});

// The SDK's 3.x line reads no sampler or batch variables itself: rpcscope reads them
// (observe/otlp-traces-settings.ts). This sidecar samples no trace of its own
// (a root ratio of 0) and follows a caller's decision, and exports every 100 ms.
describe('tracing: the sampler and batch processor the OTEL_* variables name', () => {
  let upstream: Awaited<ReturnType<typeof startUpstream>>;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let sampled: SidecarProcess;
  before(async () => {
    upstream = await startUpstream();
    receiver = await startOtlpReceiver();
    sampled = await startSidecarProcess(['--upstream', upstream.url], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
  });
  after(async () => {
    await sampled.stop();
    await Promise.all([upstream.close(), receiver.close()]);
  });

  it('samples as OTEL_TRACES_SAMPLER says: a new trace at the ratio, a caller\'s trace as the caller decided', async () => {
    // A call that starts its trace here: ratio 0, so not sampled, and the upstream is told so.
    await grpcCall(sampled.url, '');
    const [, ownTrace, , ownFlags] = upstream.seen.at(-1)!.split('-');
    assert.match(ownTrace ?? '', /^[0-9a-f]{32}$/);
    assert.equal(ownFlags, '00', 'a trace the root ratio of 0 left unsampled goes upstream marked so');

    // A call in the caller's sampled trace: the parent decides, so it is sampled and exported.
    const callerTrace = '0af7651916cd43dd8448eb211c80319c';
    await grpcCall(sampled.url, `00-${callerTrace}-b7ad6b7169203331-01`);
    const [, , sentSpan, sentFlags] = upstream.seen.at(-1)!.split('-');
    assert.equal(sentFlags, '01');
    // Exported within the 100 ms schedule (the SDK's own default is 5 s).
    const deadline = Date.now() + 3000;
    while (!receiver.spans.some((s) => s.spanId === sentSpan) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    const span = receiver.spans.find((s) => s.spanId === sentSpan);
    assert.ok(span, `the sampled call's span ${sentSpan} was not exported within 3 s`);
    assert.equal(span.traceId, callerTrace);
    // The unsampled call ended first, so it would have been in this batch or an earlier one.
    assert.deepEqual(receiver.spans.filter((s) => s.traceId === ownTrace), [], 'a span of the unsampled trace was exported');
  });
});
