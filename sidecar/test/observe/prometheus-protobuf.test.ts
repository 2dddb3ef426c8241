// The protobuf exposition as a scraper decodes it: the body /metrics serves is
// read back with protobufjs against client_model's MetricFamily (the fields of
// io/prometheus/client/metrics.proto a scraper reads), and must say what the
// text format says, with native buckets that hold exactly the values recorded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMetricsObserver, type MetricsObserver } from '../../src/observe/metrics-observer.ts';
import { Router } from '../../src/route/router.ts';
import { NATIVE_ZERO_THRESHOLD, nativeBucket } from '../../src/observe/metric-cells.ts';
import { acceptsProtobuf } from '../../src/observe/prometheus-protobuf.ts';
import { endedCall } from './records.ts';
import { scrape, scrapeBytes } from './scrape.ts';
import { PROTOBUF_ACCEPT, decodeFamilies, type DecodedFamily, type DecodedHistogram } from '../../../test/support/prometheus-proto.ts';

const ACCEPT = PROTOBUF_ACCEPT;
type Decoded = DecodedFamily;

async function protobufScrape(o: MetricsObserver): Promise<Map<string, Decoded>> {
  const { contentType, body } = await scrapeBytes(o, ACCEPT);
  assert.equal(contentType, 'application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited');
  return new Map(decodeFamilies(body).map((f) => [f.name, f]));
}

/** Native bucket index → count, from spans and deltas as Prometheus reads them. */
function nativeCounts(h: DecodedHistogram): Map<number, number> {
  const out = new Map<number, number>();
  let index = 0;
  let count = 0;
  let d = 0;
  for (const span of h.positiveSpan) {
    index += span.offset;
    for (let k = 0; k < span.length; k++) {
      count += h.positiveDelta[d++]!;
      out.set(index++, count);
    }
  }
  return out;
}

const LATENCIES_MS = [0, 3, 12, 12.5, 30, 30, 31, 125, 250, 1000, 4000];

function observed(histograms: 'classic' | 'native' | 'both'): MetricsObserver {
  const o = createMetricsObserver({ router: new Router({ maxMethods: 10 }), env: {}, histograms });
  for (const ms of LATENCIES_MS) {
    const call = endedCall({ path: '/shop.v1.Catalog/GetItem', httpStatus: 200, grpcStatus: 0, ms, deadline: { header: 'grpc-timeout', raw: '10S', ms: 10_000 } });
    const end = call.endTime;
    o.callStarted(call);
    call.endTime = end;
    o.callEnded(call);
  }
  return o;
}

describe('the protobuf exposition', () => {
  test('is served only when --histograms asks for native buckets and the Accept header names the delimited MetricFamily', async () => {
    assert.ok(acceptsProtobuf(ACCEPT));
    assert.ok(!acceptsProtobuf('application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0'));
    assert.ok(!acceptsProtobuf('application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=text'));
    assert.ok(!acceptsProtobuf('application/openmetrics-text;version=1.0.0'));
    const classic = observed('classic');
    assert.match(await scrape(classic, ACCEPT), /^# HELP rpcscope_calls_total /m, '--histograms classic: the text format, as before');
    await classic.shutdown();
  });

  for (const mode of ['native', 'both'] as const) {
    test(`--histograms ${mode}: counters, gauges and histograms say what the text format says`, async () => {
      const o = observed(mode);
      const text = await scrape(o);
      const families = await protobufScrape(o);
      await o.shutdown();

      const calls = families.get('rpcscope_calls_total')!;
      assert.equal(calls.type, 0, 'COUNTER');
      assert.equal(calls.help, 'Finished calls, unary or streaming.');
      assert.deepEqual(calls.metric[0]!.label.map((l) => `${l.name}=${l.value}`), ['direction=inbound', 'protocol=grpc', 'encoding=proto', 'method=shop.v1.Catalog/GetItem', 'operation=shop.v1.Catalog/GetItem', 'code=OK', 'http_status=200']);
      assert.equal(calls.metric[0]!.counter!.value, LATENCIES_MS.length);
      assert.equal(families.get('target_info')!.metric[0]!.gauge!.value, 1);
      assert.equal(families.get('rpcscope_build_info')!.type, 1, 'GAUGE');

      const h = families.get('rpcscope_call_duration_seconds')!.metric[0]!.histogram!;
      assert.equal(h.sampleCount, LATENCIES_MS.length);
      assert.ok(Math.abs(h.sampleSum - LATENCIES_MS.reduce((a, b) => a + b) / 1000) < 1e-9);
      // Native buckets: exactly the recorded values, each in the bucket whose bounds hold it.
      assert.equal(h.schema, 3);
      assert.equal(h.zeroThreshold, NATIVE_ZERO_THRESHOLD);
      assert.equal(h.zeroCount, 1, 'the 0 ms call');
      const expected = new Map<number, number>();
      for (const ms of LATENCIES_MS.filter((v) => v > 0)) {
        const i = nativeBucket(ms / 1000);
        expected.set(i, (expected.get(i) ?? 0) + 1);
      }
      assert.deepEqual([...nativeCounts(h)].filter(([, n]) => n > 0).sort((a, b) => a[0] - b[0]), [...expected].sort((a, b) => a[0] - b[0]));
      // Classic buckets: with `both`, the text format's, less +Inf; with `native`, none.
      const textBuckets = [...text.matchAll(/^rpcscope_call_duration_seconds_bucket\{.*,le="([^"+]+)"\} (\d+)$/gm)].map((m) => ({ cumulativeCount: Number(m[2]), upperBound: Number(m[1]) }));
      assert.deepEqual(h.bucket, mode === 'both' ? textBuckets : []);
      // The deadline families have native buckets too.
      const deadlines = families.get('rpcscope_deadline_requested_seconds')!.metric[0]!.histogram!;
      assert.equal(deadlines.sampleCount, LATENCIES_MS.length);
      assert.equal(nativeCounts(deadlines).get(nativeBucket(10)), LATENCIES_MS.length, 'every 10 s deadline in the bucket holding 10');
    });
  }

  test('a value on a native bucket boundary belongs to the bucket below it, as in Prometheus', () => {
    for (let i = -200; i <= 100; i++) {
      const bound = 2 ** (i / 8);
      assert.equal(nativeBucket(bound), i, `2^(${i}/8)`);
      assert.equal(nativeBucket(bound * (1 + 1e-12)), i + 1, `just above 2^(${i}/8)`);
    }
  });
});
