import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { otlpMetricsSettings } from '../../src/observe/otlp-metrics-settings.ts';
import { makeSelfSignedCert } from '../support/certs.ts';

describe('otlpMetricsSettings', () => {
  it('is off unless OTEL_METRICS_EXPORTER names otlp, even with an endpoint set for traces', () => {
    assert.equal(otlpMetricsSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), undefined);
    assert.equal(otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'none' }), undefined);
    assert.equal(otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }), undefined);
  });

  it('takes the specification defaults', () => {
    const s = otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp' })!;
    assert.equal(s.url.href, 'http://localhost:4318/v1/metrics');
    assert.equal(s.protocol, 'http/protobuf');
    assert.equal(s.intervalMs, 60_000);
    assert.equal(s.timeoutMs, 10_000);
    assert.equal(s.temporality, 'cumulative');
    assert.equal(s.gzip, false);
    assert.deepEqual(s.headers, {});
    assert.deepEqual(s.warnings, []);
  });

  it('appends /v1/metrics to the general endpoint, uses the metrics endpoint as it is, and prefers the metrics variables', () => {
    assert.equal(otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })!.url.href, 'http://collector:4318/v1/metrics');
    const s = otlpMetricsSettings({
      OTEL_METRICS_EXPORTER: 'prometheus,otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
      OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://vendor.example/otlp/metrics',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-general=1',
      OTEL_EXPORTER_OTLP_METRICS_HEADERS: 'Authorization=Bearer%20abc, x-scope-orgid=team-a',
      OTEL_EXPORTER_OTLP_METRICS_COMPRESSION: 'gzip',
      OTEL_METRIC_EXPORT_INTERVAL: '15000',
      OTEL_EXPORTER_OTLP_METRICS_TIMEOUT: '2000',
      OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'Delta',
    })!;
    assert.equal(s.url.href, 'https://vendor.example/otlp/metrics');
    assert.equal(s.protocol, 'http/json');
    assert.deepEqual(s.headers, { authorization: 'Bearer abc', 'x-scope-orgid': 'team-a' });
    assert.equal(s.gzip, true);
    assert.equal(s.intervalMs, 15_000);
    assert.equal(s.timeoutMs, 2000);
    assert.equal(s.temporality, 'delta');
  });

  it('sends explicit-bucket histograms unless OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION asks for exponential ones', () => {
    const aggregation = (value?: string) => otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp', ...(value ? { OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: value } : {}) })!.histogramAggregation;
    assert.equal(aggregation(), 'explicit');
    assert.equal(aggregation('explicit_bucket_histogram'), 'explicit');
    assert.equal(aggregation('Base2_Exponential_Bucket_Histogram'), 'exponential');
    assert.throws(() => aggregation('exponential'), /OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: "exponential" is not one of explicit_bucket_histogram, base2_exponential_bucket_histogram/);
  });

  it('reads the TLS files of an https:// endpoint at start, refusing one it cannot read or use, and says when an http:// endpoint leaves them unused', () => {
    const { certFile, keyFile, cert } = makeSelfSignedCert();
    const https = { OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'https://collector:4318/v1/metrics' };
    const s = otlpMetricsSettings({ ...https, OTEL_EXPORTER_OTLP_CERTIFICATE: certFile, OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY: keyFile, OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE: certFile })!;
    assert.deepEqual(s.tls.ca, cert);
    assert.deepEqual(s.tls.cert, cert);
    assert.ok(s.tls.key && s.tls.key.length > 0);
    assert.deepEqual(otlpMetricsSettings(https)!.tls, {});

    const plain = otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_CERTIFICATE: certFile })!;
    assert.deepEqual(plain.tls, {});
    assert.match(plain.warnings[0]!, /OTEL_EXPORTER_OTLP_CERTIFICATE: not used, the OTLP metrics endpoint http:\/\/localhost:4318\/v1\/metrics is not https:\/\//);

    assert.throws(() => otlpMetricsSettings({ ...https, OTEL_EXPORTER_OTLP_CERTIFICATE: '/nonexistent/ca.pem' }), /OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read "\/nonexistent\/ca.pem": ENOENT/);
    assert.throws(() => otlpMetricsSettings({ ...https, OTEL_EXPORTER_OTLP_CLIENT_KEY: keyFile }), /OTEL_EXPORTER_OTLP_CLIENT_KEY is set but OTEL_EXPORTER_OTLP_\[METRICS_\]CLIENT_CERTIFICATE is not/);
    const notPem = join(mkdtempSync(join(tmpdir(), 'rpcscope-otlp-')), 'ca.pem');
    writeFileSync(notPem, 'not a certificate\n');
    assert.throws(() => otlpMetricsSettings({ ...https, OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE: notPem }), /OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE: not usable for TLS/);
    // A key that is not the certificate's.
    assert.throws(() => otlpMetricsSettings({ ...https, OTEL_EXPORTER_OTLP_CLIENT_KEY: makeSelfSignedCert().keyFile, OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: certFile }), /not usable for TLS/);
  });

  it('refuses what the specification does not allow, naming the variable, the value and what is allowed', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ OTEL_METRICS_EXPORTER: 'otlp,console' }, /OTEL_METRICS_EXPORTER: "console" is not one of otlp, prometheus, none/],
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not offered/],
      [{ OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: 'thrift' }, /OTEL_EXPORTER_OTLP_METRICS_PROTOCOL: "thrift" is not one of http\/protobuf, http\/json/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" is not http:\/\/ or https:\/\//],
      [{ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'not a url' }, /OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: "not a url" is not a URL/],
      [{ OTEL_EXPORTER_OTLP_HEADERS: 'token' }, /OTEL_EXPORTER_OTLP_HEADERS: "token" is not key=value/],
      [{ OTEL_METRIC_EXPORT_INTERVAL: '0' }, /OTEL_METRIC_EXPORT_INTERVAL: "0" is not a positive whole number of milliseconds/],
      [{ OTEL_EXPORTER_OTLP_TIMEOUT: '1.5' }, /OTEL_EXPORTER_OTLP_TIMEOUT: "1.5" is not a positive whole number/],
      [{ OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE: 'sometimes' }, /is not one of cumulative, delta, lowmemory/],
      [{ OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: 'summary' }, /is not one of explicit_bucket_histogram, base2_exponential_bucket_histogram/],
      [{ OTEL_EXPORTER_OTLP_COMPRESSION: 'zstd' }, /OTEL_EXPORTER_OTLP_COMPRESSION: "zstd" is not one of gzip, none/],
    ];
    for (const [env, message] of bad) assert.throws(() => otlpMetricsSettings({ OTEL_METRICS_EXPORTER: 'otlp', ...env }), message);
  });
});
