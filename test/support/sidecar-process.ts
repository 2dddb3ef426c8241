// The real binary as a child process: shared with the demo, which starts it the same way.
// bin/rpcscope runs the built bundle; `npm test` builds it first, and a test file
// run on its own rebuilds it here when a source changed since, so that no test
// ever runs yesterday's sidecar.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const build = spawnSync(process.execPath, [fileURLToPath(new URL('../../sidecar/build.mjs', import.meta.url)), '--if-stale'], { stdio: ['ignore', 'ignore', 'inherit'] });
if (build.status !== 0) throw new Error(`building the sidecar failed (exit ${build.status})`);

export { RPCSCOPE_BIN, startSidecarProcess, type SidecarProcess } from '@rpcscope/demo/sidecar-process';
