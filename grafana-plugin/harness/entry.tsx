// The browser harness: loads the built dist/module.js the way Grafana does — SystemJS with its
// AMD extra, the packages Grafana shares with plugins registered under their import names —
// and renders its panel with real @grafana/ui and @grafana/data, fed with DataFrames made from
// Prometheus HTTP API answers. Driven by test/panel through window.rpcscopeHarness.
import React from 'react';
import * as reactNamespace from 'react';
import * as reactDomNamespace from 'react-dom';
import { createRoot, Root } from 'react-dom/client';
import * as emotionCss from '@emotion/css';
import * as grafanaData from '@grafana/data';
import * as grafanaRuntime from '@grafana/runtime';
import * as grafanaUi from '@grafana/ui';
import { GrafanaPanelDataErrorView } from '../test-support/grafana-panel-data-error-view';
import { framesFromPrometheus, PromResponse } from '../test-support/prometheus-frames';
import { registerStandardEditors } from '../test-support/standard-editors';
// Last, so that it defines the global AMD `define` only after the bundled libraries above, some
// of them UMD, have run (they would otherwise register themselves with SystemJS).
import 'systemjs/dist/system.js';
import 'systemjs/dist/extras/amd.js';
import 'systemjs/dist/extras/named-register.js';

const { createTheme, dateTime, EventBusSrv, LoadingState, ThemeContext } = grafanaData;

interface HarnessQuery {
  refId: string;
  response: PromResponse;
  stepSeconds?: number;
}

export interface RenderSpec {
  theme: 'dark' | 'light';
  options: Record<string, unknown>;
  queries: HarnessQuery[];
  /** Unix seconds: the panel's time range. */
  from: number;
  to: number;
  width: number;
  height: number;
  timeZone?: string;
}

type PanelPluginLike = { panel: React.ComponentType<grafanaData.PanelProps>; defaults: Record<string, unknown> };

interface SystemJs {
  set(id: string, module: object): void;
  addImportMap(map: { imports: Record<string, string> }): void;
  import(id: string): Promise<{ plugin?: PanelPluginLike }>;
}

// As Grafana's sharedDependenciesMap hands them over: module namespaces, under the names
// plugins import them by. A plugin asking for anything else fails to load, as it would there.
const SHARED: Record<string, object> = {
  react: reactNamespace,
  'react-dom': reactDomNamespace,
  '@grafana/data': grafanaData,
  '@grafana/ui': grafanaUi,
  // Grafana hands plugins its @grafana/runtime after setting PanelDataErrorView to its own view
  // at start (setPanelDataErrorView is internal to Grafana, not in the published package).
  '@grafana/runtime': { ...grafanaRuntime, PanelDataErrorView: GrafanaPanelDataErrorView },
  '@emotion/css': emotionCss,
};

async function loadPlugin(url: string): Promise<PanelPluginLike> {
  const system = (window as unknown as { System: SystemJs }).System;
  const imports: Record<string, string> = {};
  for (const [name, ns] of Object.entries(SHARED)) {
    imports[name] = `app:${name}`;
    system.set(`app:${name}`, ns);
  }
  system.addImportMap({ imports });
  const exports = await system.import(new URL(url, window.location.href).href);
  if (!exports.plugin) {
    throw new Error(`${url} has no plugin export`);
  }
  return exports.plugin;
}

let root: Root | null = null;
let plugin: PanelPluginLike | null = null;

function nextFrame(): Promise<void> {
  return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r())));
}

const harness = {
  async load(url: string): Promise<string[]> {
    registerStandardEditors();
    plugin = await loadPlugin(url);
    return Object.keys(plugin.defaults);
  },

  async render(spec: RenderSpec): Promise<void> {
    if (!plugin) {
      throw new Error('load() the plugin first');
    }
    const Panel = plugin.panel;
    const theme = createTheme({ colors: { mode: spec.theme } });
    const from = dateTime(spec.from * 1000);
    const to = dateTime(spec.to * 1000);
    const timeRange = { from, to, raw: { from, to } };
    const series = spec.queries.flatMap((q) => framesFromPrometheus(q.refId, q.response, q.stepSeconds));
    const props: grafanaData.PanelProps = {
      id: 1,
      // As Grafana does: the request names the queries that ran, whatever they answered.
      data: {
        state: LoadingState.Done,
        series,
        timeRange,
        request: { targets: spec.queries.map((q) => ({ refId: q.refId })) } as unknown as grafanaData.DataQueryRequest,
      },
      timeRange,
      timeZone: spec.timeZone ?? 'utc',
      // As Grafana does: the builder's defaults under the panel's saved options.
      options: { ...plugin.defaults, ...spec.options },
      fieldConfig: { defaults: {}, overrides: [] },
      transparent: false,
      width: spec.width,
      height: spec.height,
      renderCounter: 0,
      title: 'rpcscope',
      eventBus: new EventBusSrv(),
      onOptionsChange: () => {},
      onFieldConfigChange: () => {},
      replaceVariables: (s: string) => s,
      onChangeTimeRange: () => {},
    };
    document.body.dataset.ready = 'false';
    root?.unmount();
    const container = document.getElementById('root')!;
    root = createRoot(container);
    root.render(
      <ThemeContext.Provider value={theme}>
        <grafanaUi.GlobalStyles />
        <div
          id="panel"
          style={{
            display: 'inline-block',
            padding: 8,
            background: theme.colors.background.primary,
            border: `1px solid ${theme.colors.border.weak}`,
          }}
        >
          <Panel {...props} />
        </div>
      </ThemeContext.Provider>
    );
    document.body.style.background = theme.colors.background.canvas;
    await nextFrame();
    document.body.dataset.ready = 'true';
  },

  /** A theme colour as the browser computes it (rgb(…)), to compare with an element's style. */
  themeColor(mode: 'dark' | 'light', path: string): string {
    const theme = createTheme({ colors: { mode } });
    const value = path.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown>)[k], theme.colors);
    const probe = document.createElement('span');
    probe.style.color = String(value);
    document.body.appendChild(probe);
    const rgb = getComputedStyle(probe).color;
    probe.remove();
    return rgb;
  },

  colorOf(selector: string): string | null {
    const el = document.querySelector(selector);
    return el ? getComputedStyle(el).color : null;
  },
};

Object.assign(window, { rpcscopeHarness: harness });
