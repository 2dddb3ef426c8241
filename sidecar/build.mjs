#!/usr/bin/env node
// Builds the sidecar into one CommonJS file, dist/rpcscope.cjs, with its source
// map: what bin/rpcscope runs and the container image carries. Every dependency
// is bundled (none loads files of its own at run time: protobufjs only parses
// the .proto text it is given), so the bundle needs nothing but Node.
//
// CommonJS rather than an ES module because a sidecar's idle memory is paid in
// every pod: Node's ES module loader alone holds about 4 MB more resident memory
// than its CommonJS loader for the same code (Node 24, measured with
// test/bench/startup.ts). Nothing in the sidecar needs ES module semantics at
// run time (no top-level await, no import.meta).
//
//   node sidecar/build.mjs             build
//   node sidecar/build.mjs --if-stale  build only when a source is newer than the bundle
//
// Plain JavaScript on purpose: it runs during `pnpm install`, before anything
// could load TypeScript.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
export const BUNDLE = join(root, 'dist', 'rpcscope.cjs');

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

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Base64 VLQ (the source map v3 "mappings" encoding) of one segment's fields. */
function vlq(values) {
  let out = '';
  for (const v of values) {
    let n = v < 0 ? (-v << 1) | 1 : v << 1;
    do {
      let digit = n & 31;
      n >>>= 5;
      if (n > 0) digit |= 32;
      out += B64[digit];
    } while (n > 0);
  }
  return out;
}

function unvlq(segment) {
  const values = [];
  let n = 0;
  let shift = 0;
  for (const ch of segment) {
    const digit = B64.indexOf(ch);
    n += (digit & 31) << shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    values.push(n & 1 ? -(n >>> 1) : n >>> 1);
    n = 0;
    shift = 0;
  }
  return values;
}

/**
 * Keeps only the mappings into the sidecar's own sources. The map is parsed
 * whole when the sidecar first logs a stack (src/source-stack.ts) or under
 * --enable-source-maps; the dependencies' four fifths of it would cost some
 * 5 MB of resident memory for stack frames nobody reads as TypeScript.
 */
function ownMappingsOnly(mapText) {
  const map = JSON.parse(mapText);
  const keep = map.sources.map((s) => !s.includes('node_modules/'));
  const index = [];
  const sources = [];
  map.sources.forEach((s, i) => {
    index[i] = keep[i] ? sources.push(s) - 1 : -1;
  });
  // Decoded fields are deltas from the previous segment; re-encode from absolute values.
  let src = 0, line = 0, col = 0, name = 0;
  let oSrc = 0, oLine = 0, oCol = 0, oName = 0;
  const lines = map.mappings.split(';').map((l) => {
    let genCol = 0, oGenCol = 0;
    const out = [];
    for (const seg of l ? l.split(',') : []) {
      const f = unvlq(seg);
      genCol += f[0];
      if (f.length < 4) continue;
      src += f[1];
      line += f[2];
      col += f[3];
      if (f.length > 4) name += f[4];
      if (index[src] < 0) continue;
      const fields = [genCol - oGenCol, index[src] - oSrc, line - oLine, col - oCol];
      if (f.length > 4) {
        fields.push(name - oName);
        oName = name;
      }
      out.push(vlq(fields));
      oGenCol = genCol;
      oSrc = index[src];
      oLine = line;
      oCol = col;
    }
    return out.join(',');
  });
  return JSON.stringify({ ...map, sources, mappings: lines.join(';') });
}

/** The checkout's commit, for rpcscope_build_info; none outside a git checkout (an image build). */
function gitCommit() {
  const r = spawnSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

export async function buildSidecar() {
  const commit = gitCommit();
  const result = await build({
    entryPoints: [join(root, 'src', 'main.ts')],
    outfile: BUNDLE,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    // The oldest Node that engines allows; the image runs Node 24.
    target: 'node20.19',
    // The ES module builds of the OpenTelemetry packages, where they ship one.
    mainFields: ['module', 'main'],
    sourcemap: 'linked',
    minifyWhitespace: true,
    minifySyntax: true,
    // Sources stay in the map so that stack traces and debuggers show TypeScript lines.
    sourcesContent: false,
    legalComments: 'eof',
    define: commit ? { __RPCSCOPE_COMMIT__: JSON.stringify(commit) } : {},
    write: false,
    logLevel: 'warning',
  });
  // Written beside and renamed over, so that a process starting the sidecar
  // while a build runs never reads half a file.
  mkdirSync(dirname(BUNDLE), { recursive: true });
  // The ES module bundle of earlier versions, so that nothing runs a stale one.
  for (const old of ['rpcscope.mjs', 'rpcscope.mjs.map']) rmSync(join(dirname(BUNDLE), old), { force: true });
  for (const file of result.outputFiles) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.path.endsWith('.map') ? ownMappingsOnly(file.text) : file.contents);
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
