// h2load (Debian nghttp2-client) as the load generator of the benchmarks: run it
// pinned to the load core, and read its summary and its per-request log.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Load {
  /** Calls per second over the whole run. */
  rps: number;
  ok: number;
  failed: number;
  p50Us: number;
  p99Us: number;
}

/** The value below which a share `q` (0..1) of the sorted values lie (nearest rank). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(q * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))]!;
}

/**
 * h2load's summary ("finished in 1.02s, 19607.84 req/s", "requests: N total, N
 * started, N done, N succeeded, N failed") and its --log-file lines (start time
 * µs, HTTP status, duration µs, tab-separated) into one Load.
 */
export function parseH2load(stdout: string, log: string): Load {
  const rps = Number(/finished in [\d.]+m?s, ([\d.]+) req\/s/.exec(stdout)?.[1]);
  const status = /requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed/.exec(stdout);
  const durations = log
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => Number(l.split('\t')[2]))
    .filter((d) => Number.isFinite(d))
    .sort((a, b) => a - b);
  return { rps, ok: Number(status?.[1] ?? NaN), failed: Number(status?.[2] ?? NaN), p50Us: percentile(durations, 0.5), p99Us: percentile(durations, 0.99) };
}

const logDir = mkdtempSync(join(tmpdir(), 'rpcscope-bench-h2load-'));

/**
 * Runs `h2load -n calls <shape> <request> url` (at least one call per connection) on `core` (undefined: unpinned)
 * and returns its figures; throws with h2load's words when it fails to run.
 */
export function h2load(url: string, shape: readonly string[], request: readonly string[], calls: number, core: string | undefined): Load {
  const log = join(logDir, 'requests.log');
  // h2load appends to its log file: a run must not read the previous run's calls.
  rmSync(log, { force: true });
  // h2load refuses fewer calls than connections.
  const clients = shape.includes('-c') ? Number(shape[shape.indexOf('-c') + 1]) : 1;
  const argv = ['-n', String(Math.max(calls, clients)), ...shape, ...request, `--log-file=${log}`, url];
  const r = core === undefined ? spawnSync('h2load', argv, { encoding: 'utf8' }) : spawnSync('taskset', ['-c', core, 'h2load', ...argv], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`h2load ${argv.join(' ')} failed: ${r.stderr || r.stdout}`);
  return parseH2load(r.stdout, readFileSync(log, 'utf8'));
}
