// The demo page's HTML: the three modes of the panel, each in a frame of its
// own (the harness renders one panel per document), refreshed every 5 s from
// the live Prometheus.
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const PLUGIN_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'grafana-plugin');

/** uPlot's stylesheet, which Grafana's own bundle carries and a plugin never ships. */
export const UPLOT_CSS = (): string => createRequire(createRequire(join(PLUGIN_DIR, 'package.json')).resolve('@grafana/ui')).resolve('uplot/dist/uPlot.min.css');

const FRAMES = [
  { mode: 'protocols', height: 560, title: 'Protocols: the same operation over REST, gRPC, Connect, gRPC-Web and tRPC, against REST' },
  { mode: 'beforeAfter', height: 520, title: 'Before / after: the first half of the run (REST) against the latest half (gRPC)' },
  { mode: 'pods', height: 330, title: 'Pods: the per-pod share and the skew, the pinned pod marked; --max-connection-age rolled out at 40 % of the run' },
];

export const LIVE_PAGE = (prometheusUrl: string): string => `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>rpcscope demo: the panel on live data</title>
<style>
  body { margin: 0; padding: 16px 24px; background: #111217; color: #ccccdc; font: 14px/1.45 Inter, Helvetica, Arial, sans-serif; }
  h1 { font-size: 20px; margin: 0 0 4px; color: #fff; }
  h2 { font-size: 15px; margin: 20px 0 6px; font-weight: 500; color: #fff; }
  p { margin: 0; color: #9fa7b3; }
  iframe { width: 100%; border: 0; display: block; }
  a { color: #6e9fff; }
  pre { margin: 0; padding: 8px 12px; background: #181b1f; border: 1px solid #2c3235; color: #ccccdc; font: 13px/1.5 ui-monospace, Menlo, monospace; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>rpcscope demo: the panel on live data</h1>
<p>Three order pods behind inbound sidecars and a TCP balancer; a storefront moving from REST to gRPC through the balancer; a web app batching tRPC procedures for the same operations; a back-office client balanced per call by its outbound sidecar.
Every panel below is the built plugin on what <a href="${prometheusUrl}">Prometheus</a> recorded from the sidecars, refreshed every 5 s.</p>
<h2>Migration rehearsal: the pods' sidecars send a share of REST GetOrder calls to gRPC through the transcoder (--split) and mirror calls to v2 (--shadow)</h2>
<pre id="migration">waiting for the first figures...</pre>
<script>
(async () => {
  const block = document.getElementById('migration');
  for (;;) {
    try {
      const m = await (await fetch('/api/migration')).json();
      if (m) {
        block.textContent = m.lines.join('\\n');
        block.dataset.transcoded = String(m.figures.split.transcoded);
        block.dataset.restCalls = String(m.figures.split.restCalls);
        block.dataset.match = String(m.figures.shadow.match);
        block.dataset.mismatch = String(m.figures.shadow.mismatch);
        const fields = Object.values(m.figures.shadow.differences).flatMap((d) => d.fields);
        if (fields.length) block.dataset.fields = fields.join(' ');
      }
    } catch (err) {
      console.error(err);
    }
    await new Promise((r) => setTimeout(r, 2000));
  }
})();
</script>
${FRAMES.map((f) => `<h2>${f.title}</h2>\n<iframe id="${f.mode}" src="/panel?mode=${f.mode}" style="height:${f.height}px"></iframe>`).join('\n')}
</body>
</html>
`;

/** One mode of the panel: the harness loads dist/module.js, then renders what /api/spec answers, every 5 s. */
export const PANEL_PAGE = `<!doctype html>
<html>
<head><meta charset="utf-8"><link rel="stylesheet" href="/uPlot.min.css"><style>body { margin: 0; background: #111217; color: #ccccdc; font: 13px sans-serif; }</style></head>
<body>
<div id="root">loading the panel...</div>
<script src="/harness.js"></script>
<script>
(async () => {
  const mode = new URLSearchParams(location.search).get('mode');
  const harness = window.rpcscopeHarness;
  await harness.load('/plugin/module.js');
  let renders = 0;
  for (;;) {
    try {
      const spec = await (await fetch('/api/spec?mode=' + encodeURIComponent(mode))).json();
      spec.width = document.documentElement.clientWidth - 20;
      spec.height = window.innerHeight - 20;
      await harness.render(spec);
      document.body.dataset.renders = String(++renders);
    } catch (err) {
      console.error(err);
    }
    await new Promise((r) => setTimeout(r, 5000));
  }
})();
</script>
</body>
</html>
`;
