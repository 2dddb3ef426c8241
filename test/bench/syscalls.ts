// System calls per call: strace counting every thread of a proxy process while
// a fixed number of calls pass through it. The count, not the time strace adds,
// is the figure: a proxy that writes each frame with its own write(2) shows it
// here, whatever the machine.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SyscallCount {
  /** System calls of every thread of the process over the run. */
  total: number;
  /** The most frequent ones, name -> calls, most first. */
  top: [string, number][];
}

/**
 * strace -c's summary table: `% time seconds usecs/call calls [errors] syscall`
 * rows, ending with a `total` row. Returns undefined when there is no total.
 */
export function parseStraceSummary(text: string): SyscallCount | undefined {
  const rows: [string, number][] = [];
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const cols = line.trim().split(/\s+/u);
    // % time, seconds, usecs/call, calls, [errors,] name: the calls are the fourth column.
    if (cols.length < 5 || !/^[\d.]+$/u.test(cols[0]!)) continue;
    const name = cols.at(-1)!;
    const calls = Number(cols[3]);
    if (!Number.isFinite(calls)) continue;
    if (name === 'total') total = calls;
    else rows.push([name, calls]);
  }
  if (total === undefined) return undefined;
  rows.sort((a, b) => b[1] - a[1]);
  return { total, top: rows.slice(0, 5) };
}

export const straceInstalled = (): boolean => spawnSync('sh', ['-c', 'command -v strace'], { stdio: 'ignore' }).status === 0;

/**
 * Counts the system calls of process `pid` (all its threads: `-f` with `-p`)
 * while `run` runs; `run` is synchronous (h2load through spawnSync), so strace
 * is attached before it starts and stopped after it ends.
 */
export async function countSyscalls<T>(pid: number, run: () => T): Promise<{ result: T; count: SyscallCount }> {
  const out = join(mkdtempSync(join(tmpdir(), 'rpcscope-bench-strace-')), 'summary.txt');
  const strace = spawn('strace', ['-c', '-f', '-p', String(pid), '-o', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  strace.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => strace.once('exit', (code) => resolve(code)));
  // strace says "Process N attached" (one line per thread) once it traces.
  const attached = await Promise.race([
    new Promise<boolean>((resolve) => {
      const check = (): void => {
        if (/attached/u.test(stderr)) resolve(true);
        else setTimeout(check, 20);
      };
      check();
    }),
    exited.then(() => false),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
  ]);
  if (!attached) {
    strace.kill('SIGKILL');
    throw new Error(`strace could not attach to ${pid}: ${stderr.trim() || 'no answer in 5 s'}`);
  }
  // The other threads attach in the same breath; give them a moment.
  await new Promise((r) => setTimeout(r, 200));
  let result: T;
  try {
    result = run();
  } finally {
    strace.kill('SIGINT');
    await exited;
  }
  const count = parseStraceSummary(readFileSync(out, 'utf8'));
  if (count === undefined) throw new Error(`strace wrote no summary for ${pid}: ${stderr.trim()}`);
  return { result, count };
}
