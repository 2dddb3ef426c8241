import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkOtlpTracesSettings, tracesSdkSettings } from '../../src/observe/otlp-traces-settings.ts';
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
      [{ OTEL_BSP_SCHEDULE_DELAY: '1s' }, /OTEL_BSP_SCHEDULE_DELAY: "1s" is not a whole number of milliseconds/],
      [{ OTEL_BSP_EXPORT_TIMEOUT: '0' }, /OTEL_BSP_EXPORT_TIMEOUT: "0" is not a whole number of milliseconds of at least 1/],
      [{ OTEL_BSP_MAX_QUEUE_SIZE: '-5' }, /OTEL_BSP_MAX_QUEUE_SIZE: "-5" is not a whole number of spans/],
      [{ OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '4096' }, /OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 4096 is more than the queue holds \(OTEL_BSP_MAX_QUEUE_SIZE: 2048, its default\)/],
      [{ OTEL_BSP_MAX_QUEUE_SIZE: '100', OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '200' }, /OTEL_BSP_MAX_EXPORT_BATCH_SIZE: 200 is more than the queue holds \(OTEL_BSP_MAX_QUEUE_SIZE: 100\)/],
      [{ OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: 'many' }, /OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: "many" is not a whole number of items/],
    ];
    for (const [env, message] of bad) assert.throws(() => checkOtlpTracesSettings({ ...on, ...env }), message);
  });
});

describe('tracesSdkSettings', () => {
  it('gives the SDK the specification\'s defaults when nothing is set: parentbased_always_on, the SDK\'s own batch and limits', () => {
    assert.deepEqual(tracesSdkSettings({}), { sampler: 'parentbased_always_on', ratio: 1, batch: {}, spanLimits: {} });
  });

  it('reads the sampler, its ratio, the batch processor and the span limits, the span-specific limit before the general one', () => {
    assert.deepEqual(
      tracesSdkSettings({
        OTEL_TRACES_SAMPLER: ' ParentBased_TraceIdRatio ',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
        OTEL_BSP_SCHEDULE_DELAY: '0',
        OTEL_BSP_EXPORT_TIMEOUT: '10000',
        OTEL_BSP_MAX_QUEUE_SIZE: '4096',
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '1024',
        OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '256',
        OTEL_ATTRIBUTE_COUNT_LIMIT: '64',
        OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '32',
        OTEL_SPAN_EVENT_COUNT_LIMIT: '8',
        OTEL_SPAN_LINK_COUNT_LIMIT: '4',
        OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT: '2',
        OTEL_LINK_ATTRIBUTE_COUNT_LIMIT: '1',
      }),
      {
        sampler: 'parentbased_traceidratio',
        ratio: 0.25,
        batch: { scheduledDelayMillis: 0, exportTimeoutMillis: 10000, maxQueueSize: 4096, maxExportBatchSize: 1024 },
        spanLimits: { attributeValueLengthLimit: 256, attributeCountLimit: 32, eventCountLimit: 8, linkCountLimit: 4, attributePerEventCountLimit: 2, attributePerLinkCountLimit: 1 },
      },
    );
  });

  it('reads the ratio only for a ratio sampler, where it defaults to 1', () => {
    assert.equal(tracesSdkSettings({ OTEL_TRACES_SAMPLER: 'always_off', OTEL_TRACES_SAMPLER_ARG: 'ignored' }).sampler, 'always_off');
    assert.equal(tracesSdkSettings({ OTEL_TRACES_SAMPLER: 'traceidratio' }).ratio, 1);
    assert.equal(tracesSdkSettings({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' }).ratio, 0);
  });
});
