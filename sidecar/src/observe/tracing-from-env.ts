// Which call tracing a sidecar runs with, from the standard OpenTelemetry
// variables. The OpenTelemetry SDK (otlp-call-tracing.ts) is loaded only when
// tracing is on: a sidecar without it never holds the SDK in memory.
import type { Logger } from '../log.ts';
import { noopTracing, type CallTracing } from '../call/call-tracing.ts';

export function tracingEnabled(env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.OTEL_TRACES_EXPORTER === 'none' || env.OTEL_SDK_DISABLED === 'true') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/** The call tracing the environment asks for: the no-op one, or spans over OTLP/HTTP. */
export async function createCallTracing(serviceName: string, env: Readonly<Record<string, string | undefined>>): Promise<CallTracing> {
  if (!tracingEnabled(env)) return noopTracing;
  const { createOtlpCallTracing } = await import('./otlp-call-tracing.ts');
  return createOtlpCallTracing(serviceName, env);
}

/** With tracing on, what the OpenTelemetry SDK reports (a failed span export, a setting it fell back from) goes to `log`. */
export async function logTracingDiagnostics(log: Logger): Promise<void> {
  const { logDiagnostics } = await import('./otlp-call-tracing.ts');
  logDiagnostics(log);
}
