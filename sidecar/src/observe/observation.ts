// What the sidecar observes, built from the settings and the files they name
// (read beforehand by config/start-files.ts): the metrics observer, the call
// tracing, the access log, and the admin handlers that expose them.
import type http from 'node:http';
import type { Config } from '../config/load.ts';
import type { StartFiles } from '../config/start-files.ts';
import type { Logger } from '../log.ts';
import type { Observer } from './observer.ts';
import { createAccessLog } from './access-log.ts';
import { noopTracing, type CallTracing } from './call-tracing.ts';
import type { Faults } from './faults.ts';
import { createMetricsObserver } from './metrics-observer.ts';
import { Router } from '../route/router.ts';

/** What the pipeline is given to observe calls with: the data planes report to `observers`. */
export interface Observation {
  /** The router of the routes files; without one, calls are routed by --max-methods alone. */
  router?: Router;
  observers: Observer[];
  tracing: CallTracing;
  adminHandlers: Map<string, http.RequestListener>;
  /** Families served on /metrics after the call metrics (the translation metrics). */
  addMetrics?(render: (openMetrics: boolean) => string): void;
  shutdown(): Promise<void>;
}

export type ObservationFactory = (knownEndpoints: () => readonly string[], faults: Faults) => Observation;

/** `tracing` comes from createCallTracing (tracing-from-env.ts), awaited beforehand: off unless given. */
export function createObservation(
  config: Config,
  files: StartFiles,
  log: Logger,
  env: Readonly<Record<string, string | undefined>>,
  knownEndpoints: () => readonly string[],
  faults?: Faults,
  tracing: CallTracing = noopTracing,
): Observation {
  // One router for the whole sidecar: the data plane resolves each call's route
  // with it as the call starts, and metrics, span names and the access log read
  // that route off the call record.
  const router = new Router({ maxMethods: config.maxMethods, routes: files.routes, operations: files.operations, protos: files.protos });
  const metrics = createMetricsObserver({
    router,
    maxMethods: config.maxMethods,
    detail: config.metricsDetail,
    serviceName: config.serviceName,
    knownEndpoints,
    endpointSeriesTtlMs: config.endpointSeriesTtlMs,
    faults,
    env,
    // The calls' traces are the latency exemplars.
    spanOf: tracing === noopTracing ? undefined : (call) => tracing.spanOf(call),
  });
  const accessLog = createAccessLog({ destination: config.accessLog, sample: config.accessLogSample, route: (call) => metrics.route(call), log });
  return {
    router,
    observers: [metrics, accessLog.observer],
    tracing,
    adminHandlers: new Map<string, http.RequestListener>([['/metrics', (req, res) => metrics.handleMetrics(req, res)]]),
    addMetrics: (render) => metrics.addFamilies(render),
    shutdown: async () => {
      await Promise.all([metrics.shutdown(), tracing.shutdown(), accessLog.close()]);
    },
  };
}
