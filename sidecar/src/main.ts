// The rpcscope command: read the settings, start the sidecar, drain on SIGTERM.
import { loadConfig, type Config } from './config/load.ts';
import { ConfigError } from './config/parse-value.ts';
import { createLogger } from './log.ts';
import { createObservation, type Observation } from './observe/observation.ts';
import { startSidecar } from './pipeline.ts';

/** Settings and what they load, or the text to print instead of starting. */
function prepare(): { config: Config; observation: Observation } | { text: string; code: number } {
  try {
    const result = loadConfig(process.argv.slice(2), process.env);
    if (result.kind === 'help') return { text: result.text, code: 0 };
    return { config: result.config, observation: createObservation(result.config, process.env) };
  } catch (err) {
    if (err instanceof ConfigError) return { text: `rpcscope: ${err.message}\n`, code: 2 };
    throw err;
  }
}

async function main(): Promise<number> {
  const prepared = prepare();
  if ('text' in prepared) {
    (prepared.code === 0 ? process.stdout : process.stderr).write(prepared.text);
    return prepared.code;
  }
  const { config, observation } = prepared;
  const log = createLogger(config.logLevel);
  const sidecar = await startSidecar(config, log, observation);
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
      log.info('draining', { signal, timeoutMs: config.drainTimeoutMs });
      sidecar.drain().then(({ unfinished }) => {
        if (unfinished > 0) log.warn('drain timeout: calls still in flight were ended', { unfinished });
        log.info('stopped');
        return observation.shutdown();
      }).then(() => {
        resolve(0);
      });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  });
}

main().then(
  (code) => process.exit(code),
  (err: Error & { code?: string }) => {
    // A port already in use is the common start failure: say which.
    process.stderr.write(`rpcscope: cannot start: ${err.code === 'EADDRINUSE' ? `address in use (${(err as { address?: string }).address}:${(err as { port?: number }).port})` : err.message}\n`);
    process.exit(1);
  },
);
