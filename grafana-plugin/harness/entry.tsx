// The browser harness: loads the built dist/module.js the way Grafana does (an AMD module whose
// dependencies are the packages Grafana shares), and renders its panel with real @grafana/ui
// and @grafana/data, fed with DataFrames made from Prometheus HTTP API answers. Driven by
// test/panel through window.rpcscopeHarness.
import React from 'react';
import { createRoot, Root } from 'react-dom/client';
import * as emotionCss from '@emotion/css';
import * as grafanaData from '@grafana/data';
import * as grafanaUi from '@grafana/ui';
import { framesFromPrometheus, PromResponse } from '../test-support/prometheus-frames';
import { registerStandardEditors } from '../test-support/standard-editors';

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
type Define = (deps: string[], factory: (...deps: unknown[]) => { plugin: PanelPluginLike }) => void;

// The modules Grafana's loader hands to plugins, under the names plugins import them by.
const SHARED: Record<string, unknown> = {
  react: React,
  'react-dom': { createRoot },
  '@grafana/data': grafanaData,
  '@grafana/ui': grafanaUi,
  '@emotion/css': emotionCss,
};

/** Runs module.js and returns its `plugin` export, failing on any dependency Grafana would not provide. */
function loadPlugin(url: string): Promise<PanelPluginLike> {
  return new Promise((resolve, reject) => {
    const define: Define = (deps, factory) => {
      const missing = deps.filter((d) => !(d in SHARED));
      if (missing.length > 0) {
        reject(new Error(`module.js asks for ${missing.join(', ')}, which the harness (like Grafana) does not share`));
        return;
      }
      try {
        resolve(factory(...deps.map((d) => SHARED[d])).plugin);
      } catch (e) {
        reject(e);
      }
    };
    Object.assign(window, { define: Object.assign(define, { amd: true }) });
    const script = document.createElement('script');
    script.src = url;
    script.onerror = () => reject(new Error(`could not load ${url}`));
    document.head.appendChild(script);
  });
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
      data: { state: LoadingState.Done, series, timeRange },
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
