#!/usr/bin/env node
// Builds the sidecar into one ES module, dist/rpcscope.mjs, with its source map:
// what bin/rpcscope runs and the container image carries. Every dependency is
// bundled (none loads files of its own at run time: protobufjs only parses the
// .proto text it is given), so the bundle needs nothing but Node.
//
//   node sidecar/build.mjs             build
//   node sidecar/build.mjs --if-stale  build only when a source is newer than the bundle
//
// Plain JavaScript on purpose: it runs during `pnpm install`, before anything
// could load TypeScript.
import { build } from 'esbuild';
import { mkdirSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
export const BUNDLE = join(root, 'dist', 'rpcscope.mjs');

/** Newest modification time under dir (ms), for the staleness check. */
function newest(dir) {
  let t = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    t = Math.max(t, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return t;
}

/** True when the bundle is missing or older than a source, the manifest or this script. */
export function bundleIsStale() {
  let built;
  try {
    built = statSync(BUNDLE).mtimeMs;
  } catch {
    return true;
  }
  const inputs = Math.max(newest(join(root, 'src')), statSync(join(root, 'package.json')).mtimeMs, statSync(fileURLToPath(import.meta.url)).mtimeMs);
  return inputs > built;
}

export async function buildSidecar() {
  const result = await build({
    entryPoints: [join(root, 'src', 'main.ts')],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // The oldest Node that engines allows; the image runs Node 24.
    target: 'node20.19',
    // The ES module builds of the OpenTelemetry packages, where they ship one.
    mainFields: ['module', 'main'],
    sourcemap: 'linked',
    // Sources stay in the map so that stack traces and debuggers show TypeScript lines.
    sourcesContent: true,
    legalComments: 'eof',
    // CommonJS dependencies (protobufjs, yaml) call require() for Node's own
    // modules; an ES module has no require, so give the bundle one.
    banner: { js: "import { createRequire as __rpcscopeCreateRequire } from 'node:module';\nconst require = __rpcscopeCreateRequire(import.meta.url);" },
    write: false,
    logLevel: 'warning',
  });
  // Written beside and renamed over, so that a process starting the sidecar
  // while a build runs never reads half a file.
  mkdirSync(dirname(BUNDLE), { recursive: true });
  for (const file of result.outputFiles) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    renameSync(tmp, file.path);
  }
  return BUNDLE;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (!process.argv.includes('--if-stale') || bundleIsStale()) {
    const t0 = performance.now();
    await buildSidecar();
    process.stdout.write(`rpcscope: built ${BUNDLE} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  }
}
