// The small part of Grafana's dashboard JSON model (schemaVersion 42, as
// @grafana/schema 13.2 defines it) that rpcscope's dashboards use, with
// builders that fill in what Grafana would save itself, so the committed JSON
// matches what an export from Grafana looks like. test/deploy checks the
// output against @grafana/schema's published types.

export const SCHEMA_VERSION = 42;

/** Every panel and query reads from the data source the `datasource` variable picks. */
export const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

export interface Target {
  refId: string;
  datasource: typeof DATASOURCE;
  editorMode: 'code';
  expr: string;
  legendFormat: string;
  range: boolean;
  instant: boolean;
  /** Grafana asks Prometheus for the exemplars (trace ids) of the series too. */
  exemplar?: boolean;
}

export interface GridPos {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Panel {
  id: number;
  type: string;
  title: string;
  description: string;
  gridPos: GridPos;
  datasource: typeof DATASOURCE;
  targets: Target[];
  options: Record<string, unknown>;
  fieldConfig: {
    defaults: Record<string, unknown>;
    overrides: unknown[];
  };
  /** Grafana repeats the panel once per selected value of this variable. */
  repeat?: string;
  repeatDirection?: 'h' | 'v';
}

export interface RowPanel {
  id: number;
  type: 'row';
  title: string;
  collapsed: false;
  gridPos: GridPos;
  panels: [];
}

export interface Variable {
  name: string;
  label: string;
  type: 'datasource' | 'query' | 'custom';
  [key: string]: unknown;
}

export interface Dashboard {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  editable: boolean;
  graphTooltip: 1;
  schemaVersion: number;
  version: number;
  refresh: string;
  time: { from: string; to: string };
  timepicker: Record<string, never>;
  timezone: string;
  fiscalYearStartMonth: 0;
  liveNow: false;
  weekStart: string;
  links: unknown[];
  annotations: { list: unknown[] };
  templating: { list: Variable[] };
  panels: (Panel | RowPanel)[];
}

export interface QuerySpec {
  expr: string;
  legend?: string;
  refId?: string;
  /** Only on rpcscope_call_duration_seconds quantiles: the one family whose buckets carry exemplars (docs/metrics.md). */
  exemplar?: boolean;
}

/** A panel before layout: its size is given, its position and id are assigned by `dashboard`. */
export type Draft = Omit<Panel, 'id' | 'gridPos'> & { w: number; h: number };
export type RowDraft = { row: string };

function targets(queries: QuerySpec[]): Target[] {
  return queries.map((q, i) => ({
    refId: q.refId ?? String.fromCharCode(65 + i),
    datasource: DATASOURCE,
    editorMode: 'code',
    expr: q.expr,
    legendFormat: q.legend ?? '__auto',
    range: true,
    instant: false,
    ...(q.exemplar ? { exemplar: true } : {}),
  }));
}

export interface PanelSpec {
  title: string;
  description: string;
  unit: string;
  queries: QuerySpec[];
  w?: number;
  h?: number;
  /** One panel per selected value of this variable (e.g. one per service). */
  repeat?: string;
}

/** Grafana's panel repeat, stacked vertically so each copy keeps the full width. */
function repeatOf(variable: string | undefined): Pick<Panel, 'repeat' | 'repeatDirection'> {
  return variable ? { repeat: variable, repeatDirection: 'v' } : {};
}

export function timeseries(spec: PanelSpec & { stack?: boolean; min?: number; max?: number }): Draft {
  const defaults: Record<string, unknown> = {
    unit: spec.unit,
    color: { mode: 'palette-classic' },
    custom: {
      drawStyle: 'line',
      lineInterpolation: 'linear',
      lineWidth: 1,
      fillOpacity: spec.stack ? 30 : 10,
      gradientMode: 'none',
      showPoints: 'never',
      spanNulls: false,
      axisPlacement: 'auto',
      stacking: { mode: spec.stack ? 'normal' : 'none', group: 'A' },
      thresholdsStyle: { mode: 'off' },
    },
  };
  if (spec.min !== undefined) defaults.min = spec.min;
  if (spec.max !== undefined) defaults.max = spec.max;
  return {
    type: 'timeseries',
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    targets: targets(spec.queries),
    options: {
      legend: { calcs: ['mean', 'max'], displayMode: 'table', placement: 'bottom', showLegend: true },
      tooltip: { mode: 'multi', sort: 'desc' },
    },
    fieldConfig: { defaults, overrides: [] },
    ...repeatOf(spec.repeat),
    w: spec.w ?? 12,
    h: spec.h ?? 8,
  };
}

/** A single figure; `red` is the value from which it turns red. */
export function stat(spec: PanelSpec & { red?: number }): Draft {
  const steps: { color: string; value: number | null }[] = [{ color: 'green', value: null }];
  if (spec.red !== undefined) steps.push({ color: 'red', value: spec.red });
  return {
    type: 'stat',
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    targets: targets(spec.queries),
    options: {
      reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      orientation: 'auto',
      textMode: 'auto',
      colorMode: 'value',
      graphMode: 'area',
      justifyMode: 'auto',
      wideLayout: true,
      showPercentChange: false,
      percentChangeColorMode: 'standard',
    },
    fieldConfig: {
      defaults: {
        unit: spec.unit,
        color: { mode: 'thresholds' },
        thresholds: { mode: 'absolute', steps },
      },
      overrides: [],
    },
    w: spec.w ?? 6,
    h: spec.h ?? 4,
  };
}

export const PLUGIN_ID = 'rpcscope-protocolcompare-panel';

/** The rpcscope panel plugin; its queries are told apart by refId (grafana-plugin/README.md). */
export function protocolCompare(spec: {
  title: string;
  description: string;
  options: Record<string, unknown>;
  queries: (QuerySpec & { refId: string })[];
  w?: number;
  h?: number;
  repeat?: string;
}): Draft {
  return {
    type: PLUGIN_ID,
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    targets: targets(spec.queries),
    options: spec.options,
    fieldConfig: { defaults: {}, overrides: [] },
    ...repeatOf(spec.repeat),
    w: spec.w ?? 24,
    h: spec.h ?? 12,
  };
}

export function row(title: string): RowDraft {
  return { row: title };
}

const GRID_WIDTH = 24;

/** Places panels left to right, wrapping at the grid width; a row starts a new band. */
export function layout(items: (Draft | RowDraft)[]): (Panel | RowPanel)[] {
  const out: (Panel | RowPanel)[] = [];
  let x = 0;
  let y = 0;
  let bandHeight = 0;
  let id = 1;
  for (const item of items) {
    if ('row' in item) {
      y += bandHeight;
      out.push({ id: id++, type: 'row', title: item.row, collapsed: false, gridPos: { x: 0, y, w: GRID_WIDTH, h: 1 }, panels: [] });
      y += 1;
      x = 0;
      bandHeight = 0;
      continue;
    }
    if (x + item.w > GRID_WIDTH) {
      y += bandHeight;
      x = 0;
      bandHeight = 0;
    }
    const { w, h, ...panel } = item;
    out.push({ id: id++, ...panel, gridPos: { x, y, w, h } });
    x += w;
    bandHeight = Math.max(bandHeight, h);
  }
  return out;
}

export function dashboard(spec: {
  uid: string;
  title: string;
  description: string;
  variables: Variable[];
  items: (Draft | RowDraft)[];
}): Dashboard {
  return {
    uid: spec.uid,
    title: spec.title,
    description: spec.description,
    tags: ['rpcscope'],
    editable: true,
    graphTooltip: 1,
    schemaVersion: SCHEMA_VERSION,
    version: 1,
    refresh: '30s',
    time: { from: 'now-1h', to: 'now' },
    timepicker: {},
    timezone: 'browser',
    fiscalYearStartMonth: 0,
    liveNow: false,
    weekStart: '',
    links: [
      {
        title: 'rpcscope',
        type: 'dashboards',
        tags: ['rpcscope'],
        asDropdown: true,
        includeVars: true,
        keepTime: true,
        targetBlank: false,
        icon: 'external link',
        tooltip: '',
      },
    ],
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    templating: { list: spec.variables },
    panels: layout(spec.items),
  };
}
