// What the sidecar observes, built from the settings and the files they name
// (read beforehand by config/start-files.ts): the metrics observer, the call
// tracing, the access log, and the admin handlers that expose them.
import type http from 'node:http';
import type { Config } from '../config/load.ts';
import type { StartFiles } from '../config/start-files.ts';
import type { Logger } from '../log.ts';
import type { Observer } from '../call/observer.ts';
import { createAccessLog } from './access-log.ts';
import { noopTracing, type CallTracing } from '../call/call-tracing.ts';
import type { Faults } from '../call/faults.ts';
import type { MetricFamily } from './metric-cells.ts';
import { createMetricsObserver } from './metrics-observer.ts';
import { resourceAttributes } from './otel-resource.ts';
import { OtlpMetricsExporter } from './otlp-metrics-exporter.ts';
import type { SidecarPeers } from './otlp-metrics-reader.ts';
import type { OtlpMetricsSettings } from './otlp-metrics-settings.ts';
import { Router } from '../route/router.ts';

/** What the pipeline is given to observe calls with: the data planes report to `observers`. */
export interface Observation {
  /** The router of the routes files; without one, calls are routed by --max-methods alone. */
  router?: Router;
  observers: Observer[];
  tracing: CallTracing;
  adminHandlers: Map<string, http.RequestListener>;
  /** Families kept by other stages (retries, translation, shadow, the admin port): served on /metrics after the call metrics, and pushed over OTLP with them. */
  addMetrics?(families: readonly MetricFamily[]): void;
  shutdown(): Promise<void>;
}

export type ObservationFactory = (knownEndpoints: () => readonly string[], faults: Faults) => Observation;

/**
 * `tracing` comes from createCallTracing (tracing-from-env.ts), awaited beforehand: off unless given;
 * `otlpMetrics` from otlpMetricsSettings (otlp-metrics-settings.ts): no OTLP push unless given.
 */
export function createObservation(
  config: Config,
  files: StartFiles,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  knownEndpoints: () => readonly string[],
  faults?: Faults,
  tracing: CallTracing = noopTracing,
  otlpMetrics?: OtlpMetricsSettings,
): Observation {
  // One router for the whole sidecar: the data plane resolves each call's route
  // with it as the call starts, and metrics, span names and the access log read
  // that route off the call record.
  const router = new Router({ maxMethods: config.maxMethods, routes: files.routes, operations: files.operations, protos: files.protos });
  const metrics = createMetricsObserver({
    router,
    maxMethods: config.maxMethods,
    detail: config.metricsDetail,
    histograms: config.histograms,
    serviceName: config.serviceName,
    knownEndpoints,
    endpointSeriesTtlMs: config.endpointSeriesTtlMs,
    faults,
    env,
    // The calls' traces are the latency exemplars.
    spanOf: tracing === noopTracing ? undefined : (call) => tracing.spanOf(call),
    exponentialHistograms: otlpMetrics?.histogramAggregation === 'exponential',
  });
  // The same cells /metrics renders, pushed on a timer: nothing on the call path.
  const peers: SidecarPeers = {
    inboundScheme: config.tlsCert === undefined ? 'http' : 'https',
    outbound: config.mode === 'outbound' ? { scheme: config.upstream.tls ? 'https' : 'http', address: config.upstream.host, port: config.upstream.port } : undefined,
  };
  const otlp = otlpMetrics === undefined ? undefined : new OtlpMetricsExporter(otlpMetrics, resourceAttributes(config.serviceName, env), metrics, log, peers);
  if (otlp !== undefined) {
    metrics.addFamilies([otlp.exports]);
    otlp.start();
  }
  const accessLog = createAccessLog({ destination: config.accessLog, sample: config.accessLogSample, route: (call) => metrics.route(call), log });
  return {
    router,
    observers: [metrics, accessLog.observer],
    tracing,
    adminHandlers: new Map<string, http.RequestListener>([['/metrics', (req, res) => metrics.handleMetrics(req, res)]]),
    addMetrics: (families) => metrics.addFamilies(families),
    shutdown: async () => {
      await Promise.all([metrics.shutdown(), tracing.shutdown(), accessLog.close(), otlp?.shutdown()]);
    },
  };
}
