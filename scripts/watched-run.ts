// A command run by `npm test`, its output passed through as it comes, and ended
// if it prints nothing for too long. node:test ends a test past its timeout, but
// not a test file's process that stays alive once its tests are over (a server,
// socket or timer a failed test left open): the run would wait for it until CI's
// own limit. `--test-force-exit` would end such a process, but it loses the
// verdicts its process had not yet sent (nodejs/node#64833: tests missing from
// the count, a failing test's name and error lost, the run still passing), so
// `npm test` runs without it and ends a silent run here instead, naming the test
// files whose processes were still running.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

export interface WatchedRun {
  code: number;
  output: string;
  /** Set when the run printed nothing for `silentMs` and was ended: the test files its processes were running then. */
  silentFiles?: string[];
}

export interface WatchOptions {
  cwd: string;
  /** Added to this process's environment; a variable given as undefined is left out. */
  env?: NodeJS.ProcessEnv;
  /** How long the command may print nothing before it is ended (with every process under it); without it, as long as it likes. */
  silentMs?: number;
  /** Where its output goes as it comes (the runner's own stdout and stderr). */
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
}

export function runWatched(cmd: string, args: string[], o: WatchOptions): Promise<WatchedRun> {
  return new Promise((resolve) => {
    const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: '0', ...o.env };
    // A variable given as undefined is left out.
    for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
    // In the runner's process group, so that a Ctrl-C ends it with the runner.
    const child = spawn(cmd, args, { cwd: o.cwd, stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    let silentFiles: string[] | undefined;
    let timer: NodeJS.Timeout | undefined;
    const arm = (): void => {
      if (o.silentMs === undefined) return;
      clearTimeout(timer);
      timer = setTimeout(() => {
        const under = processesUnder(child.pid!);
        silentFiles = [...new Set(under.flatMap((p) => p.args.filter((a) => a.endsWith('.test.ts'))))].sort();
        for (const pid of [child.pid!, ...under.map((p) => p.pid)]) {
          try {
            process.kill(pid, 'SIGKILL');
          } catch {
            // Gone already.
          }
        }
      }, o.silentMs);
    };
    const tee = (to: NodeJS.WritableStream | undefined) => (d: Buffer) => {
      output += d.toString();
      to?.write(d);
      arm();
    };
    child.stdout.on('data', tee(o.stdout));
    child.stderr.on('data', tee(o.stderr));
    arm();
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: silentFiles ? 1 : (code ?? 1), output, ...(silentFiles && { silentFiles }) });
    });
  });
}

/** `pid`'s descendants and their command lines (Linux's /proc). */
function processesUnder(pid: number): { pid: number; args: string[] }[] {
  const children = new Map<number, number[]>();
  const commands = new Map<number, string[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The fields after the command's name, which is in parentheses and may hold spaces: state, then the parent's pid.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
      commands.set(Number(name), readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0'));
    } catch {
      // The process ended while being read.
    }
  }
  const under: { pid: number; args: string[] }[] = [];
  const visit = (p: number): void => {
    for (const c of children.get(p) ?? []) {
      under.push({ pid: c, args: commands.get(c) ?? [] });
      visit(c);
    }
  };
  visit(pid);
  return under;
}
