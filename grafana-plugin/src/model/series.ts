import { DataFrame, FieldConfig, FieldType, Labels } from '@grafana/data';
import { Reducer } from '../types';

/** One labelled series of one query, read straight from a DataFrame field (never copied). */
export interface Series {
  refId: string;
  labels: Labels;
  /** Epoch milliseconds, index-aligned with values; empty when the row had no time column. */
  times: ArrayLike<number>;
  values: ArrayLike<number | null | undefined>;
  /** The field's config as Grafana hands it over: the panel's field config and overrides applied. */
  config?: FieldConfig;
}

export type SeriesByRefId = Map<string, Series[]>;

const NO_TIMES: number[] = [];

/**
 * Groups every number field of every frame by the frame's refId. Handles the shapes Grafana's
 * Prometheus data source returns: a frame per series (time + value field whose `labels` carry
 * the series labels), several value fields in one frame, and the "Table" format, where labels
 * are string columns and each row is a series.
 */
export function readSeries(frames: readonly DataFrame[]): SeriesByRefId {
  const out: SeriesByRefId = new Map();
  const add = (s: Series) => {
    let list = out.get(s.refId);
    if (!list) {
      list = [];
      out.set(s.refId, list);
    }
    list.push(s);
  };

  for (const frame of frames) {
    const refId = frame.refId ?? '';
    const time = frame.fields.find((f) => f.type === FieldType.time);
    const strings = frame.fields.filter((f) => f.type === FieldType.string);
    for (const field of frame.fields) {
      if (field.type !== FieldType.number) {
        continue;
      }
      const labelled = field.labels !== undefined && Object.keys(field.labels).length > 0;
      if (strings.length > 0 && !labelled) {
        for (let row = 0; row < frame.length; row++) {
          const labels: Labels = {};
          for (const s of strings) {
            const v = s.values[row];
            if (v !== undefined && v !== null && v !== '') {
              labels[s.name] = String(v);
            }
          }
          add({
            refId,
            labels,
            times: time ? [time.values[row] as number] : NO_TIMES,
            values: [field.values[row] as number | null],
            config: field.config,
          });
        }
        continue;
      }
      add({ refId, labels: field.labels ?? {}, times: time ? time.values : NO_TIMES, values: field.values, config: field.config });
    }
  }
  return out;
}

/** The series's one number over the range; null when it has no finite point. */
export function reduce(values: ArrayLike<number | null | undefined>, reducer: Reducer): number | null {
  const n = values.length;
  if (reducer === 'last') {
    for (let i = n - 1; i >= 0; i--) {
      const v = values[i];
      if (typeof v === 'number' && Number.isFinite(v)) {
        return v;
      }
    }
    return null;
  }
  let sum = 0;
  let count = 0;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (typeof v === 'number' && Number.isFinite(v)) {
      sum += v;
      count++;
      if (v > max) {
        max = v;
      }
    }
  }
  if (count === 0) {
    return null;
  }
  return reducer === 'max' ? max : sum / count;
}

/** Smallest positive spacing between consecutive timestamps: a range query's step. */
export function stepMs(times: ArrayLike<number>): number | null {
  let step = Infinity;
  for (let i = 1; i < times.length; i++) {
    const d = (times[i] as number) - (times[i - 1] as number);
    if (d > 0 && d < step) {
      step = d;
    }
  }
  return Number.isFinite(step) ? step : null;
}

/**
 * The count a per-second rate series adds up to over its range: each point stands for one step.
 * A single point (an instant query) stands for the whole range, `rangeSeconds`.
 */
export function integrateRate(series: Series, rangeSeconds: number): number {
  const step = stepMs(series.times);
  const seconds = step === null ? rangeSeconds : step / 1000;
  let total = 0;
  for (let i = 0; i < series.values.length; i++) {
    const v = series.values[i];
    if (typeof v === 'number' && Number.isFinite(v)) {
      total += v * seconds;
    }
  }
  return total;
}

/** Label names carried by any series of a refId, for messages that say what was found. */
export function labelNames(list: readonly Series[]): string[] {
  const names = new Set<string>();
  for (const s of list) {
    for (const k of Object.keys(s.labels)) {
      if (k !== '__name__') {
        names.add(k);
      }
    }
  }
  return [...names].sort();
}
