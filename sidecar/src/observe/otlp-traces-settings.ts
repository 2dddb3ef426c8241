// The OTEL_* variables of span export, checked at start when tracing is on. The
// OpenTelemetry SDK reads them itself (otlp-call-tracing.ts) and, on a value it
// cannot use, falls back to its default with a diagnostic nobody sees: spans
// would go nowhere, or somewhere else, without a word. Here such a value stops
// the start, named, as a bad OTLP metrics setting does (otlp-metrics-settings.ts),
// and what the SDK reports later is logged (otlp-call-tracing.ts).
// https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
import { ConfigError } from '../config/parse-value.ts';
import { oneOf, parseHeaders, parseUrl, pick, tlsSettings } from './otlp-metrics-settings.ts';

type Env = Readonly<Record<string, string | undefined>>;

/** The samplers the OpenTelemetry JS SDK offers. */
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

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
  if (env.OTEL_TRACES_SAMPLER) oneOf('OTEL_TRACES_SAMPLER', env.OTEL_TRACES_SAMPLER, SAMPLERS);
  const ratio = env.OTEL_TRACES_SAMPLER_ARG;
  if (ratio && /traceidratio$/.test(env.OTEL_TRACES_SAMPLER?.trim().toLowerCase() ?? '') && !(Number(ratio) >= 0 && Number(ratio) <= 1)) {
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG: "${ratio}" is not a ratio from 0 to 1`);
  }
  tlsSettings(env, url, warnings, 'TRACES');
  return warnings;
}
