// Serves the panel harness to the browser: the page, the harness bundle (React, @grafana/data,
// @grafana/ui and the loader, from grafana-plugin/harness), and a plugins directory under
// /public/plugins/, as Grafana serves each plugin's folder at public/plugins/<folder>/.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { dirname, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build, type Plugin } from 'esbuild';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PLUGIN_DIR = join(REPO, 'grafana-plugin');
export const DIST_DIR = join(PLUGIN_DIR, 'dist');

/** Builds dist/ with the plugin's own build script, so the test loads what a user would. */
export async function buildPlugin(): Promise<void> {
  await promisify(execFile)(process.execPath, [join(PLUGIN_DIR, '.config', 'build.mjs')], { cwd: PLUGIN_DIR });
}

// @grafana/* resolved to their CommonJS builds: their ES builds reach into packages whose
// ESM entry points esbuild cannot bundle for the browser as they are.
const grafanaCommonJs: Plugin = {
  name: 'grafana-commonjs',
  setup(b) {
    b.onResolve({ filter: /^@grafana\/[^/]+$/ }, (args) => ({
      path: createRequire(join(args.resolveDir, 'noop.js')).resolve(args.path),
    }));
  },
};

export async function bundleHarness(): Promise<string> {
  const result = await build({
    entryPoints: [join(PLUGIN_DIR, 'harness', 'entry.tsx')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    jsx: 'transform',
    write: false,
    minify: false,
    sourcemap: false,
    logLevel: 'error',
    define: { 'process.env.NODE_ENV': '"production"', global: 'globalThis' },
    // Stylesheets and fonts some @grafana/ui dependencies import: Grafana serves those itself,
    // and the panel uses none of them.
    loader: { '.css': 'empty', '.woff': 'empty', '.woff2': 'empty', '.svg': 'text' },
    plugins: [grafanaCommonJs],
  });
  const js = result.outputFiles[0];
  if (!js) {
    throw new Error('esbuild produced no harness bundle');
  }
  return js.text;
}

// Grafana's own bundle carries uPlot's stylesheet (its canvases and overlays are positioned by
// it), so plugins that draw with @grafana/ui's uPlot-based components never ship it: the
// harness page links the one @grafana/ui depends on.
function uplotCss(): string {
  const fromPlugin = createRequire(join(PLUGIN_DIR, 'package.json'));
  return createRequire(fromPlugin.resolve('@grafana/ui')).resolve('uplot/dist/uPlot.min.css');
}

const PAGE = `<!doctype html>
<html>
  <head><meta charset="utf-8"><title>rpcscope panel harness</title><link rel="stylesheet" href="/uPlot.min.css"></head>
  <body><div id="root"></div><script src="/harness.js"></script></body>
</html>`;

const TYPES: Record<string, string> = {
  '.js': 'text/javascript',
  '.map': 'application/json',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.md': 'text/markdown',
};

/** Where Grafana serves its plugins directory. */
export const PLUGINS_PATH = '/public/plugins/';

export interface HarnessServer {
  url: string;
  close(): Promise<void>;
}

/** `pluginsDir`: a directory of plugin folders, as Grafana's plugins directory holds them. */
export function serveHarness(bundle: string, pluginsDir: string): Promise<HarnessServer> {
  const css = uplotCss();
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (path === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      return;
    }
    if (path === '/uPlot.min.css') {
      readFile(css).then(
        (body) => res.writeHead(200, { 'content-type': 'text/css' }).end(body),
        () => res.writeHead(404).end()
      );
      return;
    }
    if (path === '/harness.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
      return;
    }
    if (path.startsWith(PLUGINS_PATH)) {
      const file = normalize(join(pluginsDir, path.slice(PLUGINS_PATH.length)));
      if (!file.startsWith(`${pluginsDir}/`)) {
        res.writeHead(403).end();
        return;
      }
      readFile(file).then(
        (body) => res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' }).end(body),
        () => res.writeHead(404).end()
      );
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolve({ url: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => server.close(() => r())) });
    });
  });
}
