// The OTEL_* variables of span export, checked at start when tracing is on. The
// exporter reads its own (the OTEL_EXPORTER_OTLP_* ones) and, on a value it cannot
// use, falls back to its default with a diagnostic nobody sees: spans would go
// nowhere, or somewhere else, without a word. Here such a value stops the start,
// named, as a bad OTLP metrics setting does (otlp-metrics-settings.ts), and what
// the SDK reports later is logged (otlp-call-tracing.ts).
//
// The sampler, the batch processor and the span limits are read here, not by the
// SDK: OpenTelemetry JS 3.x configures its tracer provider and batch processor in
// code only (its 2.x line read these variables itself), so rpcscope reads the
// specification's variables and hands the SDK what they say
// (tracesSdkSettings, used by otlp-call-tracing.ts).
//
// | variable                                 | SDK option (3.x)            | default (the specification's)      |
// |------------------------------------------|-----------------------------|------------------------------------|
// | OTEL_TRACES_SAMPLER                      | TracerProvider `sampler`    | parentbased_always_on              |
// | OTEL_TRACES_SAMPLER_ARG                  | the ratio of *traceidratio  | 1                                  |
// | OTEL_BSP_SCHEDULE_DELAY                  | `scheduledDelayMillis`      | 5000 ms                            |
// | OTEL_BSP_EXPORT_TIMEOUT                  | `exportTimeoutMillis`       | 30000 ms                           |
// | OTEL_BSP_MAX_QUEUE_SIZE                  | `maxQueueSize`              | 2048 spans                         |
// | OTEL_BSP_MAX_EXPORT_BATCH_SIZE           | `maxExportBatchSize`        | 512 spans, at most the queue's size |
// | OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT, else OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT | `attributeValueLengthLimit` | none |
// | OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT, else OTEL_ATTRIBUTE_COUNT_LIMIT | `attributeCountLimit` | 128                      |
// | OTEL_SPAN_EVENT_COUNT_LIMIT              | `eventCountLimit`           | 128                                |
// | OTEL_SPAN_LINK_COUNT_LIMIT               | `linkCountLimit`            | 128                                |
// | OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT         | `attributePerEventCountLimit` | 128                              |
// | OTEL_LINK_ATTRIBUTE_COUNT_LIMIT          | `attributePerLinkCountLimit`  | 128                              |
//
// https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
import { ConfigError } from '../config/parse-value.ts';
import { oneOf, parseHeaders, parseUrl, pick, tlsSettings } from './otlp-metrics-settings.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The samplers the OpenTelemetry JS SDK offers. */
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = (typeof SAMPLERS)[number];

/** The batch processor's queue when OTEL_BSP_MAX_QUEUE_SIZE is unset (the specification's default): no batch may be larger. */
const DEFAULT_MAX_QUEUE_SIZE = 2048;

/** What the tracing SDK is built with, from the environment (the table above); unset options keep the SDK's defaults. */
export interface TracesSdkSettings {
  sampler: SamplerName;
  /** The ratio of a *traceidratio sampler, 0 to 1. */
  ratio: number;
  batch: { scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number };
  spanLimits: {
    attributeValueLengthLimit?: number;
    attributeCountLimit?: number;
    eventCountLimit?: number;
    linkCountLimit?: number;
    attributePerEventCountLimit?: number;
    attributePerLinkCountLimit?: number;
  };
}

/** A whole number from the first of `names` that is set, at least `min`; undefined when none is set. */
function wholeNumber(env: Env, names: readonly string[], min: number, unit: string): number | undefined {
  const name = names.find((n) => env[n] !== undefined && env[n]!.trim() !== '');
  if (name === undefined) return undefined;
  const text = env[name]!;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min) {
    throw new ConfigError(`${name}: "${text}" is not a whole number of ${unit}${min > 0 ? ` of at least ${min}` : ''}`);
  }
  return n;
}

/** The sampler, batch processor and span limits the environment asks for; throws ConfigError, naming the variable, for a value that cannot be used. */
export function tracesSdkSettings(env: Env): TracesSdkSettings {
  const sampler = env.OTEL_TRACES_SAMPLER?.trim() ? oneOf('OTEL_TRACES_SAMPLER', env.OTEL_TRACES_SAMPLER, SAMPLERS) : 'parentbased_always_on';
  let ratio = 1;
  const arg = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  if (arg && sampler.endsWith('traceidratio')) {
    ratio = Number(arg);
    if (!(ratio >= 0 && ratio <= 1)) throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: "${env.OTEL_TRACES_SAMPLER_ARG}" is not a ratio from 0 to 1`);
  }
  const batch: TracesSdkSettings['batch'] = {};
  const delay = wholeNumber(env, ['OTEL_BSP_SCHEDULE_DELAY'], 0, 'milliseconds');
  if (delay !== undefined) batch.scheduledDelayMillis = delay;
  const timeout = wholeNumber(env, ['OTEL_BSP_EXPORT_TIMEOUT'], 1, 'milliseconds');
  if (timeout !== undefined) batch.exportTimeoutMillis = timeout;
  const queue = wholeNumber(env, ['OTEL_BSP_MAX_QUEUE_SIZE'], 1, 'spans');
  if (queue !== undefined) batch.maxQueueSize = queue;
  const size = wholeNumber(env, ['OTEL_BSP_MAX_EXPORT_BATCH_SIZE'], 1, 'spans');
  if (size !== undefined) {
    const bound = queue ?? DEFAULT_MAX_QUEUE_SIZE;
    if (size > bound) throw new ConfigError(`OTEL_BSP_MAX_EXPORT_BATCH_SIZE: ${size} is more than the queue holds (OTEL_BSP_MAX_QUEUE_SIZE: ${bound}${queue === undefined ? ', its default' : ''})`);
    batch.maxExportBatchSize = size;
  }
  const spanLimits: TracesSdkSettings['spanLimits'] = {};
  const limits: [keyof TracesSdkSettings['spanLimits'], string[]][] = [
    ['attributeValueLengthLimit', ['OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT', 'OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT']],
    ['attributeCountLimit', ['OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT', 'OTEL_ATTRIBUTE_COUNT_LIMIT']],
    ['eventCountLimit', ['OTEL_SPAN_EVENT_COUNT_LIMIT']],
    ['linkCountLimit', ['OTEL_SPAN_LINK_COUNT_LIMIT']],
    ['attributePerEventCountLimit', ['OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT']],
    ['attributePerLinkCountLimit', ['OTEL_LINK_ATTRIBUTE_COUNT_LIMIT']],
  ];
  for (const [option, names] of limits) {
    const n = wholeNumber(env, names, 0, option === 'attributeValueLengthLimit' ? 'characters' : 'items');
    if (n !== undefined) spanLimits[option] = n;
  }
  return { sampler, ratio, batch, spanLimits };
}

/** Throws ConfigError for a span-export variable the SDK would not honour; returns what the start should warn of. */
export function checkOtlpTracesSettings(env: Env): string[] {
  const warnings: string[] = [];
  for (const e of (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((x) => x.trim().toLowerCase()).filter((x) => x !== '')) {
    if (e !== 'otlp' && e !== 'none') throw new ConfigError(`OTEL_TRACES_EXPORTER: "${e}" is not one of otlp, none (rpcscope sends spans over OTLP/HTTP only)`);
  }
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const url = specific
    ? parseUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', specific)
    : new URL(`${parseUrl('OTEL_EXPORTER_OTLP_ENDPOINT', env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'http://localhost:4318').href.replace(/\/$/, '')}/v1/traces`);
  const protocol = pick(env, 'PROTOCOL', 'TRACES');
  if (protocol) {
    const [name, text] = protocol;
    if (text.trim() === 'grpc') throw new ConfigError(`${name}: "grpc" is not offered; rpcscope sends spans over OTLP/HTTP: http/protobuf or http/json (a Collector's otlp receiver takes both on port 4318)`);
    oneOf(name, text, ['http/protobuf', 'http/json'] as const);
  }
  const headers = pick(env, 'HEADERS', 'TRACES');
  if (headers) parseHeaders(headers[0], headers[1]);
  const compression = pick(env, 'COMPRESSION', 'TRACES');
  if (compression) oneOf(compression[0], compression[1], ['gzip', 'none'] as const);
  tracesSdkSettings(env);
  tlsSettings(env, url, warnings, 'TRACES');
  return warnings;
}
