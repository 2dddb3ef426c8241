// The real `sidecar/bin/rpcscope` as a child process, as a user runs it: the
// demo and the tests read its addresses from its start-up log line, so it can
// listen on free ports.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const RPCSCOPE_BIN = fileURLToPath(new URL('../../sidecar/bin/rpcscope', import.meta.url));

export interface SidecarProcess {
  proc: ChildProcess;
  /** `http://127.0.0.1:port` of the proxy port. */
  url: string;
  port: number;
  adminUrl: string;
  /** Everything the process wrote to stderr so far. */
  log(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<number | null>;
}

/** Starts rpcscope with `args`; --listen and --admin default to free loopback ports. */
export async function startSidecarProcess(args: string[], env: Record<string, string> = {}): Promise<SidecarProcess> {
  const level = args[args.indexOf('--log-level') + 1];
  if (args.includes('--log-level') && level !== 'info' && level !== 'debug') {
    throw new Error(`startSidecarProcess reads the addresses from rpcscope's "rpcscope started" info line: --log-level ${level} would hide it (use info or debug)`);
  }
  const defaults = [...(args.includes('--listen') ? [] : ['--listen', '127.0.0.1:0']), ...(args.includes('--admin') ? [] : ['--admin', '127.0.0.1:0'])];
  const proc = spawn(RPCSCOPE_BIN, [...defaults, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (d) => (stderr += d));
  proc.stdout!.resume();
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const starting = new Promise<{ listen: string; admin: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rpcscope did not start within 20 s:\n${stderr}`)), 20_000);
    const onData = (): void => {
      for (const line of stderr.split('\n')) {
        if (!line.includes('"rpcscope started"')) continue;
        clearTimeout(timer);
        proc.stderr!.off('data', onData);
        resolve(JSON.parse(line));
        return;
      }
    };
    proc.stderr!.on('data', onData);
    void exited.then((code) => reject(new Error(`rpcscope exited with ${code} before starting:\n${stderr}`)));
  });
  let started: { listen: string; admin: string };
  try {
    started = await starting;
  } catch (err) {
    // A start that failed or hung must not leave the process behind.
    if (proc.exitCode === null) proc.kill('SIGKILL');
    throw err;
  }
  const port = Number(started.listen.split(':').at(-1));
  return {
    proc,
    port,
    url: `http://127.0.0.1:${port}`,
    adminUrl: `http://127.0.0.1:${started.admin.split(':').at(-1)}`,
    log: () => stderr,
    exited,
    stop: () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      return exited;
    },
  };
}
