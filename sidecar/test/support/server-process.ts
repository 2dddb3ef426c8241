// Test apps as child processes, so that a test can kill them as a crash would:
// the gRPC C-core server of test/fixtures/servers/grpcio-metadata-echo.py, run by
// Debian's python3-grpcio (hence /usr/bin/python3, not whatever python3 comes
// first on the PATH), and the endless HTTP/2 stream of h2-stream-forever.mjs.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const GRPCIO = fileURLToPath(new URL('../fixtures/servers/grpcio-metadata-echo.py', import.meta.url));
const STREAM_FOREVER = fileURLToPath(new URL('../fixtures/servers/h2-stream-forever.mjs', import.meta.url));

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  readonly url: string;
  /** Stops it and waits for its exit (SIGKILL: a crash, not a shutdown). */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function startGrpcioServer(args: string[] = []): Promise<ServerProcess> {
  return startServerProcess('/usr/bin/python3', [GRPCIO, ...args]);
}

export function startStreamForever(args: string[] = []): Promise<ServerProcess> {
  return startServerProcess(process.execPath, [STREAM_FOREVER, ...args]);
}

function startServerProcess(command: string, args: string[]): Promise<ServerProcess> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    child.once('exit', (code) => reject(new Error(`server exited (${code}) before it served`)));
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
