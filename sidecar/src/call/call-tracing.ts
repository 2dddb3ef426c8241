// A span per call, continuing the caller's W3C trace context and handing the
// upstream a traceparent naming the sidecar's span. Off unless the standard
// OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set: then spans go out over OTLP/HTTP.
// Off is the no-op object below, and then traceparent passes through untouched.
// tracing-from-env.ts picks one at start.
import type { SpanContext } from '@opentelemetry/api';
import type { CallRecord } from './call-record.ts';

export type HeaderBag = Record<string, string | string[] | undefined>;

export interface CallTracing {
  /** Opens the call's span; returns the traceparent to send upstream, or undefined to forward the caller's as it is. */
  start(call: CallRecord, headers: HeaderBag): string | undefined;
  end(call: CallRecord): void;
  /** The open span of a call (between start and end), for the latency exemplars; undefined when tracing is off. */
  spanOf(call: CallRecord): SpanContext | undefined;
  shutdown(): Promise<void>;
}

export const noopTracing: CallTracing = {
  start: () => undefined,
  end() {},
  spanOf: () => undefined,
  shutdown: async () => {},
};
