// The rpcscope command: read the settings, start the sidecar, drain on SIGTERM;
// or only check the settings, or print the help or the version.
import { checkReport } from './check.ts';
import { COMMANDS } from './cli/commands.ts';
import { loadConfig, type Config } from './config/load.ts';
import { loadStartFiles, type StartFiles } from './config/start-files.ts';
import { createLogger } from './log.ts';
import { createCallTracing, logTracingDiagnostics, tracingEnabled } from './observe/tracing-from-env.ts';
import { createObservation } from './observe/observation.ts';
import { resourceAttributes } from './observe/otel-resource.ts';
import { otlpMetricsSettings, type OtlpMetricsSettings } from './observe/otlp-metrics-settings.ts';
import { checkOtlpTracesSettings } from './observe/otlp-traces-settings.ts';
import { startSidecar, type Sidecar } from './pipeline.ts';
import { sourceStack } from './source-stack.ts';
import { nodeSupportWarning, VERSION } from './version.ts';
import { ErrorCode, hasCode, NodeErrorCode } from './core/errors.ts';

/** A bad setting: one line on stderr, exit code 2. Anything else is not ours to word. */
function configFailure(err: unknown): number {
  if (!hasCode(err, ErrorCode.CONFIG)) throw err;
  process.stderr.write(`rpcscope: ${err.message}\n`);
  return 2;
}

async function main(): Promise<number> {
  // `rpcscope diagnose|top|tap …`: a command that reads sidecars rather than being one.
  const command = COMMANDS[process.argv[2] ?? ''];
  if (command !== undefined) return command(process.argv.slice(3), { stdout: process.stdout, stderr: process.stderr, env: process.env });
  let config: Config;
  let files: StartFiles;
  let otlpMetrics: OtlpMetricsSettings | undefined;
  const otelWarnings: string[] = [];
  try {
    const result = loadConfig(process.argv.slice(2), process.env);
    if (result.kind === 'help') {
      process.stdout.write(result.text);
      return 0;
    }
    if (result.kind === 'version') {
      process.stdout.write(`rpcscope ${VERSION}\n`);
      return 0;
    }
    config = result.config;
    // The routes, operations, .proto and TLS files are read before anything listens: their errors are settings errors.
    files = loadStartFiles(config);
    // The OTEL_* variables are settings too: a bad one stops the start (and --check), named.
    otlpMetrics = otlpMetricsSettings(process.env);
    if (tracingEnabled(process.env)) otelWarnings.push(...checkOtlpTracesSettings(process.env));
    // The resource is read only where something is exported: an operator's cluster-wide
    // OTEL_RESOURCE_ATTRIBUTES does not stop a sidecar that exports nothing over OTLP.
    if (otlpMetrics !== undefined || tracingEnabled(process.env)) resourceAttributes(config.serviceName, process.env);
    if (result.kind === 'check') {
      process.stdout.write(checkReport(config, result.settings, files));
      return 0;
    }
  } catch (err) {
    return configFailure(err);
  }
  const log = createLogger(config.logLevel);
  const oldNode = nodeSupportWarning();
  if (oldNode !== undefined) log.warn(oldNode, { node: process.versions.node });
  for (const warning of [...(otlpMetrics?.warnings ?? []), ...otelWarnings]) log.warn(warning);
  if (tracingEnabled(process.env)) await logTracingDiagnostics(log);
  let sidecar: Sidecar;
  try {
    const tracing = await createCallTracing(config.serviceName, process.env);
    sidecar = await startSidecar(config, log, (known, faults, router) => createObservation(config, router, log, process.env, known, faults, tracing, otlpMetrics), { files });
  } catch (err) {
    // The routes, operations and .proto files are read at start: their errors are settings errors.
    return configFailure(err);
  }
  log.info('rpcscope started', {
    mode: config.mode,
    listen: `${sidecar.proxyAddress.address}:${sidecar.proxyAddress.port}`,
    admin: `${sidecar.adminAddress.address}:${sidecar.adminAddress.port}`,
    upstream: config.upstream.href,
    ...(config.grpcUpstream ? { grpcUpstream: config.grpcUpstream.href } : {}),
    tls: config.tlsCert !== undefined,
  });

  return new Promise((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      log.info('draining', { signal, delayMs: config.drainDelayMs, timeoutMs: config.drainTimeoutMs });
      sidecar.drain().then(({ unfinished }) => {
        if (unfinished > 0) log.warn('drain timeout: calls still in flight were ended', { unfinished });
        log.info('stopped');
        resolve(0);
      });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}

// A crash is reported in TypeScript terms too (Node then prints the bundle's own frames).
process.on('uncaughtExceptionMonitor', (err) => {
  const mapped = sourceStack(err instanceof Error ? err.stack : undefined);
  if (mapped !== undefined && mapped !== (err as Error).stack) process.stderr.write(`rpcscope: crashed: ${mapped}\n`);
});

main().then(
  (code) => process.exit(code),
  (err: Error & { code?: string }) => {
    // A port already in use is the common start failure: say which.
    process.stderr.write(`rpcscope: cannot start: ${err.code === NodeErrorCode.ADDRESS_IN_USE ? `address in use (${(err as { address?: string }).address}:${(err as { port?: number }).port})` : err.message}\n`);
    process.exit(1);
  },
);
