import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HistogramFamily, ValueFamily } from '../../src/observe/metric-cells.ts';
import type { HistogramDataPoint, KeyValue, OtlpMetric } from '../../src/observe/otlp-metrics-encoding.ts';
import { OtlpMetricsReader, otlpName } from '../../src/observe/otlp-metrics-reader.ts';

const attrs = (p: { attributes: KeyValue[] }): Record<string, string> => Object.fromEntries(p.attributes.map((a) => [a.key, 'intValue' in a.value ? a.value.intValue : a.value.stringValue]));
const histogram = (metrics: OtlpMetric[], name: string): HistogramDataPoint[] => {
  const m = metrics.find((x) => x.name === name);
  assert.ok(m && 'histogram' in m, `no histogram ${name} in ${metrics.map((x) => x.name).join(', ')}`);
  return m.histogram.dataPoints;
};

describe('OtlpMetricsReader', () => {
  it('reads the call latency cells as the semantic-convention instruments, by direction and protocol, adding up what they do not name; the scheme and the outbound service from the settings', () => {
    const duration = new HistogramFamily('rpcscope_call_duration_seconds', 'd', [0.1, 1]);
    const base = { method: 'shop.v1.Cart/Add', operation: 'shop.v1.Cart/Add' };
    duration.cell({ direction: 'inbound', protocol: 'grpc', encoding: 'proto', ...base }).record(0.05);
    duration.cell({ direction: 'inbound', protocol: 'grpc_web', encoding: 'text', ...base }).record(0.5);
    duration.cell({ direction: 'outbound', protocol: 'connect', encoding: 'json', ...base, code: 'NOT_FOUND' }).record(2);
    duration.cell({ direction: 'inbound', protocol: 'rest', encoding: 'other', method: 'GET /v1/carts/{id}', operation: 'x' }).record(0.2);
    duration.cell({ direction: 'outbound', protocol: 'rest', encoding: 'other', method: '_OTHER', operation: '_OTHER' }).record(0.2);
    const peers = { inboundScheme: 'https' as const, outbound: { scheme: 'http' as const, address: 'orders.shop.svc', port: 8080 } };
    const metrics = new OtlpMetricsReader('cumulative', 1_700_000_000_000, duration, peers).read([duration], 1_700_000_060_000);

    const server = histogram(metrics, 'rpc.server.call.duration');
    assert.deepEqual(server.map(attrs), [{ 'rpc.system.name': 'grpc', 'rpc.method': 'shop.v1.Cart/Add' }]);
    assert.deepEqual([server[0]!.count, server[0]!.bucketCounts, server[0]!.sum, server[0]!.explicitBounds], ['2', ['1', '1', '0'], 0.55, [0.1, 1]]);
    assert.equal(server[0]!.startTimeUnixNano, '1700000000000000000');
    assert.equal(server[0]!.timeUnixNano, '1700000060000000000');
    assert.deepEqual(histogram(metrics, 'rpc.client.call.duration').map(attrs), [{ 'rpc.system.name': 'connectrpc', 'rpc.method': 'shop.v1.Cart/Add', 'rpc.status_code': 'NOT_FOUND', 'server.address': 'orders.shop.svc', 'server.port': '8080' }]);
    assert.deepEqual(histogram(metrics, 'http.server.request.duration').map(attrs), [{ 'http.request.method': 'GET', 'http.route': '/v1/carts/{id}', 'url.scheme': 'https' }]);
    assert.deepEqual(histogram(metrics, 'http.client.request.duration').map(attrs), [{ 'http.request.method': '_OTHER', 'url.scheme': 'http', 'server.address': 'orders.shop.svc', 'server.port': '8080' }]);
    assert.ok(metrics.every((m) => m.unit === 's'));
  });

  it('sends a series kept by status as a point per status code, which /metrics serves added up as one series', () => {
    const duration = new HistogramFamily('rpcscope_call_duration_seconds', 'd', [0.1, 1]);
    const grpc = duration.cell({ direction: 'inbound', protocol: 'grpc', encoding: 'proto', method: 'shop.v1.Cart/Add', operation: 'shop.v1.Cart/Add' });
    duration.part(grpc, { code: 'OK', http_status: 200 }).record(0.05);
    duration.part(grpc, { code: 'NOT_FOUND', http_status: 200 }).record(0.5);
    duration.part(grpc, { code: 'NOT_FOUND', http_status: 0 }).record(2);
    const rest = duration.cell({ direction: 'inbound', protocol: 'rest', encoding: 'json', method: 'GET /v1/carts/{id}', operation: 'x' });
    duration.part(rest, { code: 'OK', http_status: 200 }).record(0.2);
    duration.part(rest, { code: 'NOT_FOUND', http_status: 404 }).record(0.05);
    duration.part(rest, { code: 'UNAVAILABLE', http_status: 0 }).record(3);
    const metrics = new OtlpMetricsReader('cumulative', 0, duration).read([duration], 1000);

    const points = (name: string) => histogram(metrics, name).map((p) => ({ ...attrs(p), count: p.count, buckets: p.bucketCounts.join(' ') }));
    assert.deepEqual(points('rpc.server.call.duration'), [
      { 'rpc.system.name': 'grpc', 'rpc.method': 'shop.v1.Cart/Add', 'rpc.status_code': 'OK', count: '1', buckets: '1 0 0' },
      { 'rpc.system.name': 'grpc', 'rpc.method': 'shop.v1.Cart/Add', 'rpc.status_code': 'NOT_FOUND', count: '2', buckets: '0 1 1' },
    ]);
    assert.deepEqual(points('http.server.request.duration'), [
      { 'http.request.method': 'GET', 'http.route': '/v1/carts/{id}', 'http.response.status_code': '200', 'url.scheme': 'http', count: '1', buckets: '0 1 0' },
      { 'http.request.method': 'GET', 'http.route': '/v1/carts/{id}', 'http.response.status_code': '404', 'url.scheme': 'http', count: '1', buckets: '1 0 0' },
      // A call that ended without an answer has no status code to carry.
      { 'http.request.method': 'GET', 'http.route': '/v1/carts/{id}', 'url.scheme': 'http', count: '1', buckets: '0 0 1' },
    ]);
    const status = histogram(metrics, 'http.server.request.duration')[1]!.attributes.find((a) => a.key === 'http.response.status_code');
    assert.deepEqual(status?.value, { intValue: '404' }, 'an int attribute, as the conventions type it');

    const text = duration.render();
    assert.match(text, /^rpcscope_call_duration_seconds_count\{direction="inbound",protocol="grpc",encoding="proto",method="shop.v1.Cart\/Add",operation="shop.v1.Cart\/Add"\} 3$/m);
    assert.match(text, /^rpcscope_call_duration_seconds_sum\{direction="inbound",protocol="grpc",[^}]*\} 2.55$/m);
    assert.match(text, /^rpcscope_call_duration_seconds_bucket\{direction="inbound",protocol="rest",.*,le="1"\} 2$/m);
    assert.doesNotMatch(text, /code=|http_status=/, 'the parts\' attributes stay out of the exposition');
  });

  it('sends exponential histograms when asked, from the buckets each cell keeps beside its explicit ones; with delta temporality each export\'s own', () => {
    const duration = new HistogramFamily('rpcscope_call_duration_seconds', 'd', [0.1, 1]);
    const overhead = new HistogramFamily('rpcscope_proxy_overhead_seconds', 'o', [0.001]);
    duration.exponential = overhead.exponential = true;
    const series = duration.cell({ direction: 'inbound', protocol: 'grpc', encoding: 'proto', method: 'm/M', operation: 'm/M' });
    const grpcWeb = duration.cell({ direction: 'inbound', protocol: 'grpc_web', encoding: 'text', method: 'm/M', operation: 'm/M' });
    const ok = duration.part(series, { code: 'OK', http_status: 200 });
    const okWeb = duration.part(grpcWeb, { code: 'OK', http_status: 200 });
    const o = overhead.cell({ direction: 'inbound', protocol: 'grpc' });
    for (const v of [0.04, 0.041, 0.042]) ok.record(v);
    okWeb.record(0.043);
    o.record(0.00002);
    const reader = new OtlpMetricsReader('delta', 0, duration);
    const exponential = (metrics: OtlpMetric[], name: string) => {
      const m = metrics.find((x) => x.name === name);
      assert.ok(m && 'exponentialHistogram' in m, `no exponential histogram ${name}`);
      return m.exponentialHistogram.dataPoints;
    };
    const first = reader.read([duration, overhead], 1000);
    const [point] = exponential(first, 'rpc.server.call.duration');
    // grpc and grpc_web are one point: their buckets merged.
    assert.deepEqual([point!.count, point!.zeroCount, attrs(point!)], ['4', '0', { 'rpc.system.name': 'grpc', 'rpc.method': 'm/M', 'rpc.status_code': 'OK' }]);
    assert.ok(Math.abs(point!.sum - 0.166) < 1e-12);
    assert.equal(point!.positive.bucketCounts.reduce((n, c) => n + Number(c), 0), 4);
    // 40 to 43 ms in at most 160 buckets: each about 0.03 % wide.
    assert.ok(point!.scale >= 10, `scale ${point!.scale}`);
    assert.equal(exponential(first, 'rpcscope.proxy_overhead')[0]!.count, '1');

    ok.record(2);
    const second = reader.read([duration, overhead], 2000);
    const [delta] = exponential(second, 'rpc.server.call.duration');
    assert.deepEqual([delta!.count, delta!.sum, delta!.positive.bucketCounts, delta!.positive.offset], ['1', 2, ['1'], (1 << 20) - 1]);
    assert.equal(delta!.scale, 20, 'a delta starts over at scale 20');
    assert.equal(exponential(second, 'rpcscope.proxy_overhead')[0]!.count, '0');
    // The explicit buckets, which /metrics serves, are the cumulative ones still.
    assert.match(duration.render(), /^rpcscope_call_duration_seconds_count\{direction="inbound",protocol="grpc",.*\} 4$/m);
  });

  it('names the other families rpcscope.*, so that a Prometheus exporter gives back the /metrics names', () => {
    assert.deepEqual(otlpName('rpcscope_stream_resets_total', true), { name: 'rpcscope.stream_resets', unit: '' });
    assert.deepEqual(otlpName('rpcscope_stream_duration_seconds', false), { name: 'rpcscope.stream_duration', unit: 's' });
    assert.deepEqual(otlpName('rpcscope_call_bytes_total', true), { name: 'rpcscope.call_bytes', unit: 'By' });
    assert.deepEqual(otlpName('rpcscope_load_skew_ratio', false), { name: 'rpcscope.load_skew_ratio', unit: '1' });
  });

  it('with delta temporality, sends what changed since the previous export; gauges as they are', () => {
    const duration = new HistogramFamily('rpcscope_call_duration_seconds', 'd', [0.1]);
    const calls = new ValueFamily('rpcscope_calls_total', 'c', 'counter');
    const active = new ValueFamily('rpcscope_calls_active', 'a', 'gauge');
    const h = duration.cell({ direction: 'inbound', protocol: 'grpc', encoding: 'proto', method: 'm/M', operation: 'm/M' });
    const c = calls.cell({ code: 'OK' });
    const a = active.cell({ method: 'm/M' });
    const reader = new OtlpMetricsReader('delta', 0, duration);
    h.record(0.05);
    c.value = 3;
    a.value = 2;
    reader.read([duration, calls, active], 1000);
    h.record(0.5);
    c.value = 5;
    const second = reader.read([duration, calls, active], 2000);
    const point = histogram(second, 'rpc.server.call.duration')[0]!;
    assert.deepEqual([point.count, point.bucketCounts, point.sum, point.startTimeUnixNano], ['1', ['0', '1'], 0.5, '1000000000']);
    const sum = second.find((m) => m.name === 'rpcscope.calls');
    assert.ok(sum && 'sum' in sum);
    assert.deepEqual([sum.sum.dataPoints[0]!.asDouble, sum.sum.aggregationTemporality, sum.sum.isMonotonic], [2, 1, true]);
    const gauge = second.find((m) => m.name === 'rpcscope.calls_active');
    assert.ok(gauge && 'gauge' in gauge);
    assert.equal(gauge.gauge.dataPoints[0]!.asDouble, 2);
  });
});
