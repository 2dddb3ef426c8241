// What the sidecar observes, built from the settings and the files they name
// (read beforehand by config/start-files.ts): the metrics observer, the call
// tracing, and the admin handlers that expose them.
import type http from 'node:http';
import type { Config } from '../config/load.ts';
import type { StartFiles } from '../config/start-files.ts';
import type { Observation } from '../pipeline.ts';
import { createCallTracing } from './call-tracing.ts';
import { createMetricsObserver } from './metrics-observer.ts';

export function createObservation(config: Config, files: StartFiles, env: Readonly<Record<string, string | undefined>>, knownEndpoints: () => readonly string[]): Observation {
  const metrics = createMetricsObserver({
    maxMethods: config.maxMethods,
    routes: files.routes,
    operations: files.operations,
    protos: files.protos,
    serviceName: config.serviceName,
    knownEndpoints,
    env,
  });
  const tracing = createCallTracing(config.serviceName, env);
  return {
    observers: [metrics],
    tracing,
    adminHandlers: new Map<string, http.RequestListener>([['/metrics', (req, res) => metrics.handleMetrics(req, res)]]),
    shutdown: async () => {
      await Promise.all([metrics.shutdown(), tracing.shutdown()]);
    },
  };
}
