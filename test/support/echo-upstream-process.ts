// A demo echo upstream in a process of its own (test/bench/upstream-process.ts),
// so that under load the test's clients, the upstream and the sidecar each have
// their own event loop and the sidecar's CPU and memory are its own.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../bench/upstream-process.ts', import.meta.url));

export interface EchoUpstreamProcess {
  url: string;
  pid: number;
  close(): Promise<void>;
}

/** `grpc-js`: EchoService on @grpc/grpc-js (gRPC only). `connect`: connect-node's EchoService and the REST routes, HTTP/1.1 and h2c. */
export async function startEchoUpstreamProcess(impl: 'grpc-js' | 'connect'): Promise<EchoUpstreamProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', SCRIPT, impl], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`the ${impl} upstream did not start within 30 s`)), 30_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) {
        clearTimeout(timer);
        resolve(line.trim());
      }
    });
    void exited.then(() => reject(new Error(`the ${impl} upstream exited before it printed its URL`)));
  });
  return {
    url,
    pid: proc.pid!,
    close: async () => {
      if (proc.exitCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}
