// Node 24 for the benchmark's Node rows: the pinned Node rpcscope runs on
// (scripts/node-runtime.mjs), fetched from the npm registry once into a cache
// and reused by later runs; the same copy `npm test` runs on when the machine's
// Node is older.
// @ts-expect-error: a plain JavaScript module (it runs before tsx is installed), without type declarations.
import { NODE_PINNED, pinnedNode } from '../../scripts/node-runtime.mjs';

/** Pinned so that two runs measure the same Node. */
export const NODE_24_VERSION: string = NODE_PINNED;

/** The path of Node 24's binary, installing it first when the cache lacks it; a string error when npm cannot. */
export function node24(): { bin: string } | { error: string } {
  return pinnedNode() as { bin: string } | { error: string };
}

/** A Node a benchmark runs rpcscope on: its major version, as the rows name it, and its binary. */
export interface BenchNode {
  version: string;
  bin: string;
}

/**
 * The Nodes a benchmark's `--node 20|24|both` asks for: `20`, the Node running
 * the benchmark (a machine's Node 20, to compare with the Node rpcscope
 * supports); `24`, Node 24 (node24); `both`, the two, or Node 24 once when the
 * benchmark runs on it. `node24Error` says why Node 24 is missing from `nodes`
 * when it was asked for and npm could not fetch it.
 */
export function benchNodes(choice: string): { nodes: BenchNode[]; node24Error?: string } {
  if (!['20', '24', 'both'].includes(choice)) throw new Error(`--node must be 20, 24 or both, got ${choice}`);
  const nodes: BenchNode[] = [];
  if (choice !== '24') nodes.push({ version: process.versions.node.split('.')[0]!, bin: process.execPath });
  if (choice === '20') return { nodes };
  const n = node24();
  if ('error' in n) return { nodes, node24Error: n.error };
  if (process.versions.node === NODE_24_VERSION && nodes.length > 0) return { nodes };
  nodes.push({ version: '24', bin: n.bin });
  return { nodes };
}
