// OTLP metrics settings, from the standard OpenTelemetry variables only, read
// once at start. Off unless OTEL_METRICS_EXPORTER names `otlp`: a sidecar whose
// environment already points traces at a Collector does not start pushing
// metrics it never asked for. A value outside what the specification allows
// stops the start with the variable, the value and what is allowed.
// https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
// https://opentelemetry.io/docs/specs/otel/protocol/exporter/
import { readFileSync } from 'node:fs';
import { nodeTls } from '../builtins.ts';
import { ConfigError } from '../config/parse-value.ts';

type Env = Readonly<Record<string, string | undefined>>;

export type OtlpProtocol = 'http/protobuf' | 'http/json';
export type Temporality = 'cumulative' | 'delta';

export interface OtlpMetricsSettings {
  /** The full URL metrics are posted to (…/v1/metrics). */
  readonly url: URL;
  readonly protocol: OtlpProtocol;
  /** Sent with every export (authentication for a vendor's endpoint, a tenant id). */
  readonly headers: Readonly<Record<string, string>>;
  /** Between the starts of two exports (OTEL_METRIC_EXPORT_INTERVAL, default 60 s). */
  readonly intervalMs: number;
  /**
   * One export request's budget (OTEL_EXPORTER_OTLP_METRICS_TIMEOUT, default 10 s). One
   * longer than the interval is allowed: the turns that come while it is out are dropped.
   */
  readonly timeoutMs: number;
  readonly temporality: Temporality;
  /**
   * OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION: `explicit` (the sidecar's
   * own boundaries, by default) or `exponential`, for which every histogram cell
   * keeps exponential buckets too (exponential-buckets.ts).
   */
  readonly histogramAggregation: 'explicit' | 'exponential';
  readonly gzip: boolean;
  /**
   * For an https:// endpoint, the PEM files OTEL_EXPORTER_OTLP_[METRICS_]CERTIFICATE
   * (the CAs the receiver's certificate is checked against, in place of the system's),
   * _CLIENT_KEY and _CLIENT_CERTIFICATE (the sidecar's own, for a receiver that asks
   * for one) name, read at start.
   */
  readonly tls: OtlpTls;
  /** What the start should say about a setting it honours differently than asked. */
  readonly warnings: readonly string[];
}

export interface OtlpTls {
  readonly ca?: Buffer;
  readonly key?: Buffer;
  readonly cert?: Buffer;
}

export type Signal = 'METRICS' | 'TRACES';

/** Signal-specific first, then the general variable (the specification's order). */
export function pick(env: Env, name: string, signal: Signal = 'METRICS'): [string, string] | undefined {
  const specific = `OTEL_EXPORTER_OTLP_${signal}_${name}`;
  if (env[specific]) return [specific, env[specific]];
  const general = `OTEL_EXPORTER_OTLP_${name}`;
  return env[general] ? [general, env[general]] : undefined;
}

function milliseconds(env: Env, name: string, fallback: number): number {
  const text = env[name];
  if (!text) return fallback;
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n <= 0) throw new ConfigError(`${name}: "${text}" is not a positive whole number of milliseconds`);
  return n;
}

export function oneOf<T extends string>(name: string, text: string, allowed: readonly T[]): T {
  const value = text.trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(value)) throw new ConfigError(`${name}: "${text}" is not one of ${allowed.join(', ')}`);
  return value as T;
}

/** `key=value,key2=value2`, percent-decoded, as OTEL_EXPORTER_OTLP_HEADERS writes them. */
export function parseHeaders(name: string, text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new ConfigError(`${name}: "${entry}" is not key=value (expected key1=value1,key2=value2)`);
    try {
      headers[decodeURIComponent(entry.slice(0, eq).trim()).toLowerCase()] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: "${entry}" is not percent-encoded correctly`);
    }
  }
  return headers;
}

export function parseUrl(name: string, text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`${name}: "${text}" is not a URL (expected http://host:4318 or https://…)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError(`${name}: "${text}" is not http:// or https:// (rpcscope speaks OTLP over HTTP, not gRPC)`);
  return url;
}

/** A PEM file a TLS variable names, read now: a path that cannot be read stops the start. */
function pemFile(setting: [string, string] | undefined): Buffer | undefined {
  if (setting === undefined) return undefined;
  const [name, path] = setting;
  try {
    return readFileSync(path.trim());
  } catch (err) {
    throw new ConfigError(`${name}: cannot read "${path}": ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** The TLS files, checked as TLS will use them, so that a wrong file stops the start rather than every export. */
export function tlsSettings(env: Env, url: URL, warnings: string[], signal: Signal = 'METRICS'): OtlpTls {
  const caSetting = pick(env, 'CERTIFICATE', signal);
  const keySetting = pick(env, 'CLIENT_KEY', signal);
  const certSetting = pick(env, 'CLIENT_CERTIFICATE', signal);
  const named = [caSetting, keySetting, certSetting].flatMap((s) => (s === undefined ? [] : [s[0]]));
  if (named.length === 0) return {};
  if (url.protocol !== 'https:') {
    warnings.push(`${named.join(', ')}: not used, the OTLP ${signal.toLowerCase()} endpoint ${url.href} is not https://`);
    return {};
  }
  if ((keySetting === undefined) !== (certSetting === undefined)) {
    const [given, missing] = keySetting ? [keySetting[0], `OTEL_EXPORTER_OTLP_[${signal}_]CLIENT_CERTIFICATE`] : [certSetting![0], `OTEL_EXPORTER_OTLP_[${signal}_]CLIENT_KEY`];
    throw new ConfigError(`${given} is set but ${missing} is not: a client certificate needs both its key and its certificate`);
  }
  const tls: OtlpTls = { ca: pemFile(caSetting), key: pemFile(keySetting), cert: pemFile(certSetting) };
  try {
    // TLS takes a CA file without a certificate in it silently, and would then trust nothing.
    if (tls.ca !== undefined) new (process.getBuiltinModule('node:crypto').X509Certificate)(tls.ca);
    nodeTls().createSecureContext(tls);
  } catch (err) {
    throw new ConfigError(`${named.join(', ')}: not usable for TLS: ${(err as Error).message}`);
  }
  return tls;
}

/** The settings, or undefined when OTLP metrics are off. */
export function otlpMetricsSettings(env: Env): OtlpMetricsSettings | undefined {
  if (env.OTEL_SDK_DISABLED === 'true') return undefined;
  const exporters = (env.OTEL_METRICS_EXPORTER ?? '').split(',').map((e) => e.trim().toLowerCase()).filter((e) => e !== '');
  for (const e of exporters) {
    // `prometheus` is what /metrics always serves; `console` is not offered.
    if (e !== 'otlp' && e !== 'none' && e !== 'prometheus') throw new ConfigError(`OTEL_METRICS_EXPORTER: "${e}" is not one of otlp, prometheus, none (rpcscope always serves Prometheus on /metrics)`);
  }
  if (!exporters.includes('otlp')) return undefined;

  const warnings: string[] = [];
  let url: URL;
  if (env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT) {
    // The signal-specific endpoint is used as it is.
    url = parseUrl('OTEL_EXPORTER_OTLP_METRICS_ENDPOINT', env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT);
  } else if (env.OTEL_EXPORTER_OTLP_ENDPOINT) {
    const base = parseUrl('OTEL_EXPORTER_OTLP_ENDPOINT', env.OTEL_EXPORTER_OTLP_ENDPOINT);
    url = new URL(`${base.href.replace(/\/$/, '')}/v1/metrics`);
  } else {
    url = new URL('http://localhost:4318/v1/metrics');
  }

  const protocolSetting = pick(env, 'PROTOCOL');
  let protocol: OtlpProtocol = 'http/protobuf';
  if (protocolSetting) {
    const [name, text] = protocolSetting;
    if (text.trim() === 'grpc') throw new ConfigError(`${name}: "grpc" is not offered; rpcscope sends OTLP over HTTP: http/protobuf or http/json (a Collector's otlp receiver takes both on port 4318)`);
    protocol = oneOf(name, text, ['http/protobuf', 'http/json'] as const);
  }

  const headerSetting = pick(env, 'HEADERS');
  const headers = headerSetting ? parseHeaders(headerSetting[0], headerSetting[1]) : {};

  const compressionSetting = pick(env, 'COMPRESSION');
  const gzip = compressionSetting ? oneOf(compressionSetting[0], compressionSetting[1], ['gzip', 'none'] as const) === 'gzip' : false;

  const intervalMs = milliseconds(env, 'OTEL_METRIC_EXPORT_INTERVAL', 60_000);
  const timeoutName = env.OTEL_EXPORTER_OTLP_METRICS_TIMEOUT ? 'OTEL_EXPORTER_OTLP_METRICS_TIMEOUT' : 'OTEL_EXPORTER_OTLP_TIMEOUT';
  const timeoutMs = milliseconds(env, timeoutName, 10_000);

  const preference = env.OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE;
  const temporality = preference ? oneOf('OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE', preference, ['cumulative', 'delta', 'lowmemory'] as const) : 'cumulative';

  const aggregation = env.OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION;
  const histogramAggregation = aggregation && oneOf('OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION', aggregation, ['explicit_bucket_histogram', 'base2_exponential_bucket_histogram'] as const) === 'base2_exponential_bucket_histogram' ? 'exponential' : 'explicit';
  // `lowmemory` is delta for counters and histograms, cumulative for up-down counters; every rpcscope gauge is a gauge.
  const tls = tlsSettings(env, url, warnings);
  return { url, protocol, headers, intervalMs, timeoutMs, temporality: temporality === 'cumulative' ? 'cumulative' : 'delta', histogramAggregation, gzip, tls, warnings };
}
