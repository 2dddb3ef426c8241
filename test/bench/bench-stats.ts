// What the benchmarks read about a process and the machine: CPU time and memory
// from Linux /proc, free loopback ports, and medians of rounds.
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { cpus } from 'node:os';

/** The Node options sidecar/bin/rpcscope gives before the bundle: for the benchmarks that run a bundle with node directly, as the launcher runs it. */
export const LAUNCHER_NODE_OPTIONS: readonly string[] = ['--max-semi-space-size=4'];

/** Clock ticks per second of /proc/<pid>/stat's times: 100 on every Linux this runs on (getconf CLK_TCK). */
const CLK_TCK = 100;

/** utime + stime of a process and all its threads, in seconds. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/**
 * The bytes a process has handed to write(2) and its kin so far (wchar of
 * /proc/<pid>/io, sockets included, whether or not they reached a disk).
 * Reading another user's process takes root or the same user.
 */
export function bytesWritten(pid: number): number {
  const m = /^wchar: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  if (!m) throw new Error(`/proc/${pid}/io has no wchar line`);
  return Number(m[1]);
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** Resident memory now, MiB. */
export function rssMiB(pid: number): number {
  return statusKiB(pid, 'VmRSS') / 1024;
}

/** The highest resident memory the process has had since it started, MiB. */
export function peakRssMiB(pid: number): number {
  return statusKiB(pid, 'VmHWM') / 1024;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export async function waitForPort(port: number, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} does not listen on 127.0.0.1:${port} after 10 s`);
}

/** The 1-minute load average: above the core count, other work competed with the run. */
export function loadAverage(): number {
  return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
}

/** The machine a run was measured on, for the results file. */
export function machine(): { cpu: string; cores: number; kernel: string } {
  const c = cpus();
  return { cpu: c[0]?.model ?? 'unknown', cores: c.length, kernel: readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim() };
}

/**
 * Ctrl-C (or SIGTERM) ends a benchmark run between two h2load runs: the proxy
 * running and the upstreams are stopped and the figures so far written, so that
 * nothing is left behind. A signal is seen only when the event loop turns,
 * hence the checkpoints between the (synchronous) h2load runs.
 */
export class Interrupted extends Error {}
let interruptedBy: NodeJS.Signals | undefined;

/** From now on SIGINT and SIGTERM interrupt the run at its next checkpoint instead of ending the process. */
export function interruptAtCheckpoints(): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => (interruptedBy = signal));
}

/** The signal that interrupted the run, if one did. */
export function interrupted(): NodeJS.Signals | undefined {
  return interruptedBy;
}

/** Lets a signal in; throws Interrupted once one came. */
export async function checkpoint(): Promise<void> {
  await new Promise((r) => setImmediate(r));
  if (interruptedBy) throw new Interrupted(interruptedBy);
}
