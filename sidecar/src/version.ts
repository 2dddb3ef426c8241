// The sidecar's version, from its package.json. A JSON import rather than a file
// read at run time: esbuild inlines it into the bundle, where no package.json
// sits beside the code, and tsx and Node read it the same way in development.
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;

declare const __RPCSCOPE_COMMIT__: string | undefined;

/** The commit the bundle was built from (sidecar/build.mjs defines it from git); undefined under tsx. */
export const BUILD_COMMIT: string | undefined = typeof __RPCSCOPE_COMMIT__ === 'string' ? __RPCSCOPE_COMMIT__ : undefined;
