// What the sidecar observes, built from the settings and the pipeline's router:
// the metrics observer, the call tracing, the access log, and the admin handlers
// that expose them.
import type http from 'node:http';
import type { Config } from '../config/load.ts';
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
import type { Router } from '../route/router.ts';

/** What the pipeline is given to observe calls with: the data planes report to `observers`. */
export interface Observation {
  observers: Observer[];
  tracing: CallTracing;
  adminHandlers: Map<string, http.RequestListener>;
  /** Families kept by other stages (retries, translation, shadow, the admin port): served on /metrics after the call metrics, and pushed over OTLP with them. */
  addMetrics?(families: readonly MetricFamily[]): void;
  shutdown(): Promise<void>;
}

/** The settings the observation reads. */
export type ObservationSettings = Pick<Config, 'metricsDetail' | 'histograms' | 'serviceName' | 'endpointSeriesTtlMs' | 'tlsCert' | 'mode' | 'upstream' | 'accessLog' | 'accessLogSample'>;

/** Given the endpoints known, the faults to count in, and the one router the data planes resolve calls with (pipeline.ts). */
export type ObservationFactory = (knownEndpoints: () => readonly string[], faults: Faults, router: Router) => Observation;

/**
 * `tracing` comes from createCallTracing (tracing-from-env.ts), awaited beforehand: off unless given;
 * `otlpMetrics` from otlpMetricsSettings (otlp-metrics-settings.ts): no OTLP push unless given.
 */
export function createObservation(
  config: ObservationSettings,
  router: Router,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  knownEndpoints: () => readonly string[],
  faults?: Faults,
  tracing: CallTracing = noopTracing,
  otlpMetrics?: OtlpMetricsSettings,
): Observation {
  const metrics = createMetricsObserver({
    router,
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
    observers: [metrics, accessLog.observer],
    tracing,
    adminHandlers: new Map<string, http.RequestListener>([['/metrics', (req, res) => metrics.handleMetrics(req, res)]]),
    addMetrics: (families) => metrics.addFamilies(families),
    shutdown: async () => {
      await Promise.all([metrics.shutdown(), tracing.shutdown(), accessLog.close(), otlp?.shutdown()]);
    },
  };
}
