// The rpcscope command: read the settings, start the sidecar, drain on SIGTERM.
import { loadConfig } from './config/load.ts';
import { ConfigError } from './config/parse-value.ts';
import { createLogger } from './log.ts';
import { startSidecar } from './pipeline.ts';

async function main(): Promise<number> {
  let result;
  try {
    result = loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`rpcscope: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (result.kind === 'help') {
    process.stdout.write(result.text);
    return 0;
  }
  const config = result.config;
  const log = createLogger(config.logLevel);
  const sidecar = await startSidecar(config, log, { observers: [], adminHandlers: new Map() });
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
