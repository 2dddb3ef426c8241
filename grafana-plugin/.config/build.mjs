// Builds dist/ as Grafana loads a plugin: module.js as an anonymous AMD module whose
// dependencies are the packages Grafana shares with plugins (React, @grafana/*, …), plus
// plugin.json, the logo, the README, the CHANGELOG and the LICENSE; then packs dist/ as
// artifacts/<id>-<version>.zip (zip.mjs), the archive Grafana installs. esbuild stands in for
// create-plugin's webpack: one entry and no lazy chunks need nothing more, and a build takes a
// second on a shared machine.
import { build } from 'esbuild';
import { copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { packDist } from './zip.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

// The modules Grafana's SystemJS loader hands to plugins (create-plugin's externals list).
const SHARED = [
  'react',
  'react-dom',
  'react/jsx-runtime',
  '@grafana/data',
  '@grafana/ui',
  '@grafana/runtime',
  '@emotion/css',
  '@emotion/react',
  'lodash',
  'moment',
  'rxjs',
  'i18next',
  'jquery',
  'd3',
];

const options = {
  entryPoints: [join(root, 'src', 'module.ts')],
  bundle: true,
  format: 'cjs',
  platform: 'browser',
  // Grafana 13 supports the last two versions of the evergreen browsers.
  target: ['es2020'],
  jsx: 'transform',
  external: SHARED,
  minify: true,
  sourcemap: 'linked',
  legalComments: 'none',
  metafile: true,
  write: false,
  logLevel: 'warning',
};

// First pass: which shared modules the bundle really imports, in a stable order.
const probe = await build({ ...options, sourcemap: false });
const imported = new Set();
for (const output of Object.values(probe.metafile.outputs)) {
  for (const imp of output.imports) {
    if (imp.external) {
      imported.add(imp.path);
    }
  }
}
const deps = [...imported].sort();
const unknown = deps.filter((d) => !SHARED.includes(d));
if (unknown.length > 0) {
  throw new Error(`module.js would import ${unknown.join(', ')}, which Grafana does not provide`);
}

// AMD, as create-plugin's webpack output: define([deps], factory) returning the module's exports
// (with `plugin` on them). esbuild's CommonJS output calls require() for the externals, which
// the factory answers from its arguments.
const params = deps.map((_, i) => `__dep${i}`);
const banner =
  `/* ${pkg.name}@${pkg.version} */ define(${JSON.stringify(deps)}, function (${params.join(', ')}) {` +
  ` var __deps = {${deps.map((d, i) => `${JSON.stringify(d)}: ${params[i]}`).join(', ')}};` +
  ' var require = function (id) { if (Object.prototype.hasOwnProperty.call(__deps, id)) { return __deps[id]; }' +
  ' throw new Error("rpcscope panel: no module " + id); };' +
  ' var module = { exports: {} }; var exports = module.exports;';
const footer = 'return module.exports; });';

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });
await build({ ...options, outfile: join(dist, 'module.js'), write: true, metafile: false, banner: { js: banner }, footer: { js: footer } });

const today = new Date().toISOString().slice(0, 10);
const pluginJson = readFileSync(join(root, 'src', 'plugin.json'), 'utf8')
  .replaceAll('%VERSION%', pkg.version)
  .replaceAll('%TODAY%', today);
writeFileSync(join(dist, 'plugin.json'), pluginJson);
cpSync(join(root, 'src', 'img'), join(dist, 'img'), { recursive: true });
// Grafana's plugin catalogue shows both from the archive.
for (const doc of ['README.md', 'CHANGELOG.md']) copyFileSync(join(root, doc), join(dist, doc));
// The licence the catalogue links to, inside the archive as the plugin validator asks.
copyFileSync(join(root, '..', 'LICENSE'), join(dist, 'LICENSE'));
console.log(`dist/module.js: AMD module importing ${deps.join(', ')}`);
console.log(`${packDist()}: dist/ under a folder named by the plugin id, unsigned`);
