// What the kernel says about a process (Linux /proc), so a reliability test can
// report the sidecar's memory, CPU and open files as an operator's `ps`, `top`
// and `ls /proc/PID/fd` would, without asking the process itself.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

/** Clock ticks per second, the unit of utime/stime in /proc/PID/stat (`getconf CLK_TCK`, 100 on every Linux we know). */
const CLK_TCK = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** A `kB` line of /proc/PID/status (proc(5)), in bytes. */
function statusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`/proc/${pid}/status has no ${field}`);
  return Number(m[1]) * 1024;
}

/** Resident set size now. */
export function rssBytes(pid: number): number {
  return statusKb(pid, 'VmRSS');
}

/** Peak resident set size since the process started (VmHWM). */
export function peakRssBytes(pid: number): number {
  return statusKb(pid, 'VmHWM');
}

/** CPU time used so far, user + system, in seconds: fields 14 and 15 of /proc/PID/stat (after the parenthesised name, which may hold spaces). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
}

/** Open file descriptors (sockets, pipes, files). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

export const MB = 1024 * 1024;

/** Polls VmRSS every `everyMs` and keeps the highest, for the peak of one phase (VmHWM is the peak of the whole life). */
export function rssSampler(pid: number, everyMs = 100): { peak(): number; stop(): number } {
  let peak = rssBytes(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssBytes(pid));
    } catch {
      clearInterval(timer);
    }
  }, everyMs);
  return {
    peak: () => peak,
    stop: () => {
      clearInterval(timer);
      return peak;
    },
  };
}

/** Waits until the open fd count has not changed for `stableMs` (idle keep-alive connections closing), at most `maxMs`; returns the count. */
export async function settledFds(pid: number, stableMs = 7000, maxMs = 60_000): Promise<number> {
  const start = Date.now();
  let count = openFds(pid);
  let since = Date.now();
  while (Date.now() - since < stableMs && Date.now() - start < maxMs) {
    await new Promise((r) => setTimeout(r, 250));
    const now = openFds(pid);
    if (now !== count) {
      count = now;
      since = Date.now();
    }
  }
  return count;
}
