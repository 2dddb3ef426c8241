// The sidecar's version, from its package.json. A JSON import rather than a file
// read at run time: esbuild inlines it into the bundle, where no package.json
// sits beside the code, and tsx and Node read it the same way in development.
import pkg from '../package.json' with { type: 'json' };

export const VERSION: string = pkg.version;
