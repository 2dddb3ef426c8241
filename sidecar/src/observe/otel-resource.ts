// The OpenTelemetry resource the sidecar describes itself with, on spans, on
// OTLP metrics and on target_info: `service.name`, the attributes of
// OTEL_RESOURCE_ATTRIBUTES, and the Kubernetes pod from the Downward API.
// https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/#general-sdk-configuration
import { ConfigError } from '../config/parse-value.ts';

type Env = Readonly<Record<string, string | undefined>>;

/**
 * `key1=value1,key2=value2`, each key and value percent-decoded (the W3C Baggage
 * octets the specification names). A malformed entry stops the start: a resource
 * silently missing its `deployment.environment` splits a dashboard in two.
 */
export function parseResourceAttributes(text: string): Record<string, string> {
  const attributes: Record<string, string> = {};
  for (const entry of text.split(',')) {
    if (entry.trim() === '') continue;
    const eq = entry.indexOf('=');
    const key = eq > 0 ? decode(entry.slice(0, eq).trim()) : '';
    if (key === '') throw new ConfigError(`OTEL_RESOURCE_ATTRIBUTES: "${entry}" is not key=value (expected key1=value1,key2=value2)`);
    attributes[key] = decode(entry.slice(eq + 1).trim());
  }
  return attributes;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConfigError(`OTEL_RESOURCE_ATTRIBUTES: "${text}" is not percent-encoded correctly`);
  }
}

/**
 * The resource's attributes. `service.name`: OTEL_SERVICE_NAME, else the one in
 * OTEL_RESOURCE_ATTRIBUTES, else --service-name (which says `rpcscope` unless
 * given), as the SDK specification orders them; the pod's name and namespace
 * (POD_NAME, POD_NAMESPACE) as the Kubernetes resource conventions name them.
 */
export function resourceAttributes(serviceName: string, env: Env): Record<string, string> {
  const fromEnv = env.OTEL_RESOURCE_ATTRIBUTES ? parseResourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES) : {};
  return {
    ...fromEnv,
    'service.name': env.OTEL_SERVICE_NAME || fromEnv['service.name'] || serviceName,
    ...(env.POD_NAME ? { 'k8s.pod.name': env.POD_NAME } : {}),
    ...(env.POD_NAMESPACE ? { 'k8s.namespace.name': env.POD_NAMESPACE } : {}),
  };
}
