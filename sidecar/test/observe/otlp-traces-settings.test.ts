import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkOtlpTracesSettings } from '../../src/observe/otlp-traces-settings.ts';
import { makeSelfSignedCert } from '../support/certs.ts';

const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };

describe('checkOtlpTracesSettings', () => {
  it('takes what the SDK honours: OTLP over HTTP, its headers, compression, samplers and TLS files', () => {
    const { certFile, keyFile } = makeSelfSignedCert();
    assert.deepEqual(checkOtlpTracesSettings(on), []);
    assert.deepEqual(checkOtlpTracesSettings({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector:4318/v1/traces',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: 'x-tenant=a',
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
      OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: certFile,
      OTEL_EXPORTER_OTLP_CLIENT_KEY: keyFile,
      OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: certFile,
    }), []);
    assert.match(checkOtlpTracesSettings({ ...on, OTEL_EXPORTER_OTLP_CERTIFICATE: certFile })[0]!, /OTEL_EXPORTER_OTLP_CERTIFICATE: not used, the OTLP traces endpoint http:\/\/collector:4318\/v1\/traces is not https:\/\//);
  });

  it('refuses, naming the variable, what the SDK would drop without a word', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ OTEL_TRACES_EXPORTER: 'zipkin' }, /OTEL_TRACES_EXPORTER: "zipkin" is not one of otlp, none/],
      [{ OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'grpc' }, /OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: "grpc" is not offered; rpcscope sends spans over OTLP\/HTTP/],
      [{ OTEL_EXPORTER_OTLP_PROTOCOL: 'thrift' }, /OTEL_EXPORTER_OTLP_PROTOCOL: "thrift" is not one of http\/protobuf, http\/json/],
      [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'not a url' }, /OTEL_EXPORTER_OTLP_ENDPOINT: "not a url" is not a URL/],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'collector:4318' }, /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "collector:4318" is not http:\/\/ or https:\/\//],
      [{ OTEL_EXPORTER_OTLP_HEADERS: 'token' }, /OTEL_EXPORTER_OTLP_HEADERS: "token" is not key=value/],
      [{ OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: 'zstd' }, /OTEL_EXPORTER_OTLP_TRACES_COMPRESSION: "zstd" is not one of gzip, none/],
      [{ OTEL_TRACES_SAMPLER: 'jaeger_remote' }, /OTEL_TRACES_SAMPLER: "jaeger_remote" is not one of always_on/],
      [{ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '5%' }, /OTEL_TRACES_SAMPLER_ARG: "5%" is not a ratio from 0 to 1/],
      [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c/v1/traces', OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: '/nonexistent.pem' }, /OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE: cannot read "\/nonexistent.pem"/],
    ];
    for (const [env, message] of bad) assert.throws(() => checkOtlpTracesSettings({ ...on, ...env }), message);
  });
});
