// Spans over OTLP/HTTP with the OpenTelemetry SDK: what tracing-from-env.ts loads
// when tracing is on.
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, diag, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider, type Sampler } from '@opentelemetry/sdk-trace';
import type { Logger } from '../log.ts';
import type { CallRecord } from '../call/call-record.ts';
import { decideCode } from '../call/call-outcome.ts';
import type { CallTracing, HeaderBag } from '../call/call-tracing.ts';
import { resourceAttributes } from './otel-resource.ts';
import { tracesSdkSettings, type SamplerName } from './otlp-traces-settings.ts';
import { RPC_SYSTEM } from './rpc-system.ts';

const propagator = new W3CTraceContextPropagator();

class OtlpCallTracing implements CallTracing {
  // Kept apart from CallRecord.observation, which belongs to the metrics observer.
  private readonly spans = new WeakMap<CallRecord, Span>();

  constructor(private readonly tracer: Tracer, private readonly provider: TracerProvider) {}

  start(call: CallRecord, headers: HeaderBag): string | undefined {
    const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const rpc = call.protocol !== 'rest';
    // Span names stay bounded, as the metrics' `method` label is: the RPC method, the
    // REST route template ("GET /orders/{id}", OpenTelemetry's `{method} {http.route}`)
    // or a tRPC batch's first procedure, `_OTHER` past --max-methods; never a raw path.
    // The call's route (resolved as it started) is the metrics' route, so spans are
    // named as the series are. A record with no route (built outside the pipeline)
    // is named by the RPC method, the first procedure or the HTTP method alone.
    const route = call.route;
    const name = route ? route.method : call.trpc ? call.trpc.procedures[0]!.path : rpc ? call.path.slice(1) : call.httpMethod;
    const space = name.indexOf(' ');
    const span = this.tracer.startSpan(
      name,
      {
        kind: call.direction === 'inbound' ? SpanKind.SERVER : SpanKind.CLIENT,
        attributes: {
          'rpcscope.protocol': call.protocol,
          'http.request.method': call.httpMethod,
          'network.protocol.version': call.httpVersion,
          // The current RPC conventions: `rpc.system.name` and the fully qualified `rpc.method`.
          ...(rpc ? { 'rpc.system.name': RPC_SYSTEM[call.protocol as Exclude<typeof call.protocol, 'rest'>], 'rpc.method': name } : space > 0 ? { 'http.route': name.slice(space + 1) } : {}),
        },
      },
      parent,
    );
    this.spans.set(call, span);
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(parent, span), carrier, defaultTextMapSetter);
    return carrier.traceparent;
  }

  spanOf(call: CallRecord): SpanContext | undefined {
    return this.spans.get(call)?.spanContext();
  }

  end(call: CallRecord): void {
    const span = this.spans.get(call);
    if (!span) return;
    const code = decideCode(call);
    // `rpc.status_code` (the status name, `NOT_FOUND`), which replaces the deprecated
    // numeric `rpc.grpc.status_code`; REST calls carry their HTTP status instead.
    if (call.protocol !== 'rest') span.setAttribute('rpc.status_code', code);
    if (call.httpStatus) span.setAttribute('http.response.status_code', call.httpStatus);
    if (call.upstream) {
      // `ip:port` (an IPv6 address in brackets): the conventions keep host and port apart.
      const colon = call.upstream.lastIndexOf(':');
      span.setAttribute('server.address', colon > 0 ? call.upstream.slice(0, colon).replace(/^\[(.*)\]$/, '$1') : call.upstream);
      if (colon > 0) span.setAttribute('server.port', Number(call.upstream.slice(colon + 1)));
    }
    if (call.reset) span.setAttribute('rpcscope.reset', `${call.reset.side}:${call.reset.code}`);
    if (code !== 'OK') span.setStatus({ code: SpanStatusCode.ERROR, message: code });
    span.end();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

/**
 * What the SDK reports (an export that failed, a setting it fell back from) goes to
 * the sidecar's log, where it would otherwise go nowhere; the same message once a
 * minute at most, since a Collector that is down fails every batch.
 */
export function logDiagnostics(log: Logger): void {
  const last = new Map<string, number>();
  const line = (write: Logger['warn']) => (message: string, ...args: unknown[]) => {
    const now = Date.now();
    if (now - (last.get(message) ?? -Infinity) < 60_000) return;
    last.set(message, now);
    write(`OpenTelemetry tracing: ${message}`, args.length > 0 ? { details: args.map((a) => (a instanceof Error ? a.message : String(a))).join(' ') } : undefined);
  };
  diag.setLogger({ error: line(log.error), warn: line(log.warn), info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
}

/** The sampler OTEL_TRACES_SAMPLER names (the specification's names, as the SDK's 2.x line read them itself). */
function samplerOf(name: SamplerName, ratio: number): Sampler {
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

export function createOtlpCallTracing(serviceName: string, env: Readonly<Record<string, string | undefined>>): CallTracing {
  const settings = tracesSdkSettings(env);
  // Not registered globally, and no context manager: each call's parent is extracted
  // from its own headers and passed to startSpan.
  const provider = new TracerProvider({
    resource: resourceFromAttributes(resourceAttributes(serviceName, env)),
    sampler: samplerOf(settings.sampler, settings.ratio),
    spanLimits: settings.spanLimits,
    // The exporter reads the OTEL_EXPORTER_OTLP_* variables itself; the processor
    // takes its exporter in its options (given alone, it would drop every span).
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), ...settings.batch })],
  });
  return new OtlpCallTracing(provider.getTracer('rpcscope'), provider);
}
