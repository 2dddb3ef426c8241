// The gRPC C-core server of test/fixtures/servers/grpcio-metadata-echo.py as a
// child process, run by Debian's python3-grpcio (hence /usr/bin/python3, not
// whatever python3 comes first on the PATH).
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../fixtures/servers/grpcio-metadata-echo.py', import.meta.url));

export interface GrpcioServer {
  readonly child: ChildProcess;
  readonly port: number;
  readonly url: string;
  /** Stops it and waits for its exit (SIGKILL: a crash, not a shutdown). */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function startGrpcioServer(args: string[] = []): Promise<GrpcioServer> {
  const child = spawn('/usr/bin/python3', [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    child.once('exit', (code) => reject(new Error(`grpcio server exited (${code}) before it served`)));
    lines.once('line', (line) => {
      const port = Number(line);
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      resolve({
        child,
        port,
        url: `http://127.0.0.1:${port}`,
        kill: async (signal = 'SIGKILL') => {
          if (child.exitCode === null && child.signalCode === null) child.kill(signal);
          await exited;
        },
      });
    });
  });
}
