import { Reducer } from '../types';
import { reduce, Series, SeriesByRefId, stepMs } from './series';

/** Label names tried, in order, when the panel is not told which label names the pod. */
export const POD_LABELS = ['pod', 'upstream', 'instance'] as const;

export interface PodRow {
  pod: string;
  /** Calls per second (null when only `share` was queried). */
  rate: number | null;
  /** Fraction of all calls, 0..1. */
  share: number | null;
  connections: number | null;
  callsPerConnection: number | null;
  /** The busiest pod while the skew is at or over the threshold: the one the load sticks to. */
  pinned: boolean;
  /** Share of the calls at each strip column (null: no data then). */
  heat: Array<number | null>;
}

export interface PodsModel {
  label: string;
  pods: PodRow[];
  skew: number | null;
  /** True when the figure came from the `skew` query, false when computed here from the pods' rates. */
  skewFromQuery: boolean;
  threshold: number;
  skewed: boolean;
  pinned: string | null;
  /** True when calls per connection is rate ÷ connections (calls/s per connection), for want of the query. */
  callsPerConnectionDerived: boolean;
  /** Start time (ms) of each strip column, and the skew within it. */
  stripTimes: number[];
  stripSkew: Array<number | null>;
  /** Start of the run of columns, up to the newest, whose skew is at or over the threshold. */
  skewSince: number | null;
  /** That run reaches back to the first column: the skew began before the range. */
  skewSinceBeforeRange: boolean;
  unlabelled: string[];
}

export interface PodsOptions {
  reducer: Reducer;
  skewThreshold: number;
  /** Empty: the first of POD_LABELS the series carry. */
  podLabel: string;
  /** Most strip columns; finer ranges are averaged into this many. */
  maxColumns: number;
}

export function detectPodLabel(list: readonly Series[], wanted: string): string | null {
  if (wanted) {
    return wanted;
  }
  for (const name of POD_LABELS) {
    if (list.some((s) => s.labels[name] !== undefined && s.labels[name] !== '')) {
      return name;
    }
  }
  return null;
}

function byPod(list: readonly Series[] | undefined, label: string): Map<string, Series> {
  const out = new Map<string, Series>();
  for (const s of list ?? []) {
    const pod = s.labels[label];
    if (pod && !out.has(pod)) {
      out.set(pod, s);
    }
  }
  return out;
}

interface Grid {
  start: number;
  step: number;
  /** Grid points per column. */
  perColumn: number;
  columns: number;
}

/** A range query's points sit on one step grid; columns group whole grid steps. */
function gridOf(series: Iterable<Series>, maxColumns: number): Grid | null {
  let start = Infinity;
  let end = -Infinity;
  let step = Infinity;
  for (const s of series) {
    const n = s.times.length;
    if (n === 0) {
      continue;
    }
    start = Math.min(start, s.times[0] as number);
    end = Math.max(end, s.times[n - 1] as number);
    const st = stepMs(s.times);
    if (st !== null) {
      step = Math.min(step, st);
    }
  }
  if (!Number.isFinite(start) || !Number.isFinite(step)) {
    return null;
  }
  const points = Math.round((end - start) / step) + 1;
  const perColumn = Math.max(1, Math.ceil(points / Math.max(1, maxColumns)));
  return { start, step, perColumn, columns: Math.ceil(points / perColumn) };
}

/** Mean of each series's points within each column, as rows of a pods × columns matrix. */
function bucket(grid: Grid, rows: readonly Series[]): Float64Array[] {
  return rows.map((s) => {
    const sums = new Float64Array(grid.columns);
    const counts = new Uint32Array(grid.columns);
    for (let i = 0; i < s.values.length; i++) {
      const v = s.values[i];
      if (typeof v !== 'number' || !Number.isFinite(v)) {
        continue;
      }
      const col = Math.floor(Math.round(((s.times[i] as number) - grid.start) / grid.step) / grid.perColumn);
      if (col >= 0 && col < grid.columns) {
        sums[col]! += v;
        counts[col]!++;
      }
    }
    const means = new Float64Array(grid.columns).fill(NaN);
    for (let c = 0; c < grid.columns; c++) {
      if (counts[c]! > 0) {
        means[c] = sums[c]! / counts[c]!;
      }
    }
    return means;
  });
}

export function buildPods(byRefId: SeriesByRefId, opts: PodsOptions): PodsModel {
  const shareList = byRefId.get('share');
  const rateList = byRefId.get('rate');
  const traffic = shareList?.length ? shareList : (rateList ?? []);
  const label = detectPodLabel(traffic, opts.podLabel) ?? POD_LABELS[0];

  const unlabelled: string[] = [];
  for (const refId of ['share', 'rate', 'connections', 'calls_per_connection']) {
    const list = byRefId.get(refId);
    if (list?.length && list.every((s) => !s.labels[label])) {
      unlabelled.push(refId);
    }
  }

  const shares = byPod(shareList, label);
  const rates = byPod(rateList, label);
  const connections = byPod(byRefId.get('connections'), label);
  const perConnection = byPod(byRefId.get('calls_per_connection'), label);
  const names = [...new Set([...shares.keys(), ...rates.keys()])];

  const rateOf = new Map(names.map((p) => [p, rates.has(p) ? reduce(rates.get(p)!.values, opts.reducer) : null]));
  let totalRate = 0;
  rateOf.forEach((r) => (totalRate += r ?? 0));

  const derivedPerConnection = perConnection.size === 0 && rates.size > 0 && connections.size > 0;
  const pods: PodRow[] = names.map((pod) => {
    const rate = rateOf.get(pod) ?? null;
    const shareSeries = shares.get(pod);
    const share = shareSeries
      ? reduce(shareSeries.values, opts.reducer)
      : rate !== null && totalRate > 0
        ? rate / totalRate
        : null;
    const conn = connections.has(pod) ? reduce(connections.get(pod)!.values, opts.reducer) : null;
    let callsPerConnection: number | null = null;
    if (perConnection.has(pod)) {
      callsPerConnection = reduce(perConnection.get(pod)!.values, opts.reducer);
    } else if (derivedPerConnection && rate !== null && conn !== null && conn > 0) {
      callsPerConnection = rate / conn;
    }
    return { pod, rate, share, connections: conn, callsPerConnection, pinned: false, heat: [] };
  });
  pods.sort((a, b) => (b.share ?? -1) - (a.share ?? -1) || a.pod.localeCompare(b.pod));

  // The headline figure: the `skew` query's newest value (it is defined over the last 30 s),
  // else max / mean of the pods' shares, idle pods counting as zero as the sidecar's gauge does.
  const skewSeries = byRefId.get('skew')?.[0];
  let skew = skewSeries ? reduce(skewSeries.values, 'last') : null;
  const skewFromQuery = skew !== null;
  if (skew === null && pods.length > 0) {
    const known = pods.map((p) => p.share ?? 0);
    const mean = known.reduce((x, y) => x + y, 0) / known.length;
    skew = mean > 0 ? Math.max(...known) / mean : null;
  }
  const skewed = skew !== null && skew >= opts.skewThreshold;
  const top = pods[0];
  if (skewed && top) {
    top.pinned = true;
  }

  // The strip: each pod's share of the calls over time, from whichever traffic query there is.
  const stripSource = shareList?.length ? shares : rates;
  const ordered = pods.map((p) => stripSource.get(p.pod)).filter((s): s is Series => s !== undefined);
  const grid = gridOf(ordered, opts.maxColumns);
  let stripTimes: number[] = [];
  let stripSkew: Array<number | null> = [];
  if (grid) {
    const matrix = bucket(grid, ordered);
    const totals = new Float64Array(grid.columns);
    const maxima = new Float64Array(grid.columns);
    for (const row of matrix) {
      for (let c = 0; c < grid.columns; c++) {
        const v = row[c]!;
        if (!Number.isNaN(v)) {
          totals[c]! += v;
          maxima[c] = Math.max(maxima[c]!, v);
        }
      }
    }
    const rowOf = new Map(ordered.map((s, i) => [s, matrix[i]!]));
    for (const p of pods) {
      const s = stripSource.get(p.pod);
      const row = s ? rowOf.get(s) : undefined;
      p.heat = Array.from({ length: grid.columns }, (_, c) => {
        const v = row?.[c];
        return v === undefined || Number.isNaN(v) || totals[c] === 0 ? null : v / totals[c]!;
      });
    }
    stripTimes = Array.from({ length: grid.columns }, (_, c) => grid.start + c * grid.perColumn * grid.step);
    const skewOverTime = skewSeries && skewSeries.times.length > 1 ? bucket(grid, [skewSeries])[0] : undefined;
    stripSkew = Array.from({ length: grid.columns }, (_, c) => {
      if (skewOverTime) {
        const v = skewOverTime[c]!;
        return Number.isNaN(v) ? null : v;
      }
      const mean = totals[c]! / pods.length;
      return mean > 0 ? maxima[c]! / mean : null;
    });
  }

  // The newest column may still be empty (no scrape yet): the run is read back from the newest with data.
  let newest = stripSkew.length - 1;
  while (newest >= 0 && stripSkew[newest] === null) {
    newest--;
  }
  let since = -1;
  for (let c = newest; c >= 0; c--) {
    const v = stripSkew[c];
    if (v === null || v === undefined || v < opts.skewThreshold) {
      break;
    }
    since = c;
  }

  return {
    label,
    pods,
    skew,
    skewFromQuery,
    threshold: opts.skewThreshold,
    skewed,
    pinned: skewed && top ? top.pod : null,
    callsPerConnectionDerived: derivedPerConnection,
    stripTimes,
    stripSkew,
    skewSince: since >= 0 ? (stripTimes[since] ?? null) : null,
    skewSinceBeforeRange: since === 0,
    unlabelled,
  };
}
