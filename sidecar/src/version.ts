// The sidecar's version, from its package.json. A JSON import rather than a file
// read at run time: esbuild inlines it into the bundle, where no package.json
// sits beside the code, and tsx and Node read it the same way in development.
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;

declare const __RPCSCOPE_COMMIT__: string | undefined;

/** The commit the bundle was built from (sidecar/build.mjs defines it from git); undefined under tsx. */
export const BUILD_COMMIT: string | undefined = typeof __RPCSCOPE_COMMIT__ === 'string' ? __RPCSCOPE_COMMIT__ : undefined;

/** The oldest Node major rpcscope supports: package.json's `engines` (">=24"). */
export const NODE_FLOOR: number = Number(/\d+/.exec(pkg.engines.node)?.[0]);

/** The warning a sidecar logs at start on a Node older than NODE_FLOOR (it still runs), or undefined. */
export function nodeSupportWarning(version: string = process.versions.node): string | undefined {
  const bare = version.replace(/^v/, '');
  if (Number.parseInt(bare, 10) >= NODE_FLOOR) return undefined;
  return `rpcscope supports Node ${NODE_FLOOR} and later, and is tested on Node ${NODE_FLOOR}; this is Node ${bare}: run it on Node ${NODE_FLOOR} (the images do)`;
}
