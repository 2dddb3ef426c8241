// What the sidecar observes, built from the settings: the metrics observer with
// its routes, operations and .proto knowledge loaded once at start, and the admin
// handlers that expose it. A file that cannot be read stops the start with a
// message naming its flag.
import type http from 'node:http';
import type { Config } from '../config/load.ts';
import type { Observation } from '../pipeline.ts';
import { ConfigError } from '../config/parse-value.ts';
import { loadOperationsFile } from '../route/operation-map.ts';
import { loadProtoDir } from '../route/proto-catalog.ts';
import { loadRouteFile } from '../route/route-file.ts';
import { createCallTracing } from './call-tracing.ts';
import type { Faults } from './faults.ts';
import { createMetricsObserver } from './metrics-observer.ts';

function load<T>(flag: string, file: string | undefined, loader: (file: string) => T): T | undefined {
  if (file === undefined) return undefined;
  try {
    return loader(file);
  } catch (err) {
    throw new ConfigError(`--${flag}: ${(err as Error).message}`);
  }
}

/** Loads what the settings name; throws ConfigError naming the flag of a file that cannot be read. */
export function createObservation(config: Config, env: Readonly<Record<string, string | undefined>>, knownEndpoints: () => readonly string[], faults?: Faults): Observation {
  const metrics = createMetricsObserver({
    maxMethods: config.maxMethods,
    routes: load('routes', config.routesFile, loadRouteFile),
    operations: load('operations', config.operationsFile, loadOperationsFile),
    protos: load('proto', config.protoDir, loadProtoDir),
    serviceName: config.serviceName,
    knownEndpoints,
    faults,
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
