// Network namespaces as a test uses them: every one it makes carries the run's
// prefix (`rpcs-<pid>-`), so that a run can tell its own from another run's and
// from what a crashed run left (its pid is gone), and removes only those. The
// addresses inside come from 198.18.0.0/15 (RFC 2544's benchmarking range),
// and no namespace has a route out: the test's traffic cannot leave them.
import { execFile, spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const NETNS_PREFIX = 'rpcs-';
/** The prefix of this run's namespaces. */
export const RUN_PREFIX = `${NETNS_PREFIX}${process.pid}-`;
const PATH = `${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

/** Runs a command (ip, iptables, ...) and returns its stdout; a failure throws with its stderr. */
export async function sh(cmd: string, args: readonly string[], input?: string): Promise<string> {
  if (input === undefined) {
    const { stdout } = await run(cmd, args, { env: { ...process.env, PATH }, maxBuffer: 16 << 20 }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`${cmd} ${args.join(' ')}: ${err.stderr?.trim() || err.message}`);
    });
    return stdout;
  }
  // iptables-restore reads its rules on stdin.
  const r = spawnSync(cmd, args, { input, env: { ...process.env, PATH }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.status}`}\n${input}`);
  return r.stdout;
}

/** `ip netns exec <ns> <cmd…>`. */
export function inNs(ns: string, cmd: string, args: readonly string[], input?: string): Promise<string> {
  return sh('ip', ['netns', 'exec', ns, cmd, ...args], input);
}

/**
 * Why namespaces cannot be used here, or undefined when they can: the suite
 * skips with this one line (not root, no `ip`, a kernel or sandbox that refuses
 * them) rather than pass without having run.
 */
export async function namespacesRefused(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'network namespaces need root (run as root, as CI does)';
  const probe = `${RUN_PREFIX}probe`;
  try {
    await sh('ip', ['netns', 'add', probe]);
    await sh('ip', ['-n', probe, 'link', 'add', 'probe0', 'type', 'bridge']);
    await inNs(probe, 'iptables', ['-t', 'nat', '-L', '-n']);
  } catch (err) {
    return `network namespaces refused here: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    await sh('ip', ['netns', 'del', probe]).catch(() => {});
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The namespaces `ip netns` knows by name. */
export function namespaces(): string[] {
  try {
    return readdirSync('/var/run/netns');
  } catch {
    return [];
  }
}

/** Kills every process inside `ns`, then deletes it (its veths, bridge and rules go with it). */
export async function deleteNamespace(ns: string): Promise<void> {
  const pids = (await sh('ip', ['netns', 'pids', ns]).catch(() => '')).split('\n').filter((p) => /^\d+$/u.test(p));
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // Gone already.
    }
  }
  await sh('ip', ['netns', 'del', ns]).catch(() => {});
}

/** Removes what runs that are no longer alive left behind (a crash, a SIGKILL): their pid is in the name. */
export async function sweepStale(): Promise<string[]> {
  const stale = namespaces().filter((ns) => {
    const m = /^rpcs-(\d+)-/u.exec(ns);
    return m !== null && Number(m[1]) !== process.pid && !alive(Number(m[1]));
  });
  for (const ns of stale) await deleteNamespace(ns);
  return stale;
}
