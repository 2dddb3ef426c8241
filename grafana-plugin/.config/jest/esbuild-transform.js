// Jest transform backed by esbuild rather than the scaffold's @swc/jest: @swc/core needs an
// install script that the workspace does not allow, and esbuild (already allowed) turns TS,
// TSX and the ESM-only packages Grafana pulls in (d3's .mjs among them) into CommonJS just as well.
const { transformSync } = require('esbuild');

const loaderFor = (filename) => {
  if (filename.endsWith('.tsx')) return 'tsx';
  if (filename.endsWith('.ts')) return 'ts';
  if (filename.endsWith('.jsx')) return 'jsx';
  return 'js';
};

module.exports = {
  process(source, filename) {
    const { code, map } = transformSync(source, {
      loader: loaderFor(filename),
      format: 'cjs',
      target: 'node20',
      jsx: 'transform',
      sourcemap: 'external',
      sourcefile: filename,
      // import.meta has no CommonJS equivalent; the ESM packages Grafana uses only feature-test it.
      logLevel: 'silent',
    });
    return { code, map };
  },
};
