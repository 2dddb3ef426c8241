// Turns a Prometheus HTTP API answer into the DataFrames Grafana's Prometheus data source hands
// a panel (Grafana 10+, backend-shaped "timeseries-multi"): one frame per series, a `Time` field
// and a `Value` field whose `labels` are the series labels, the query's refId on the frame.
// Used by the jest tests and by the browser harness, which feeds it a real Prometheus's answers.
import { createDataFrame, DataFrame, DataFrameType, FieldType, Labels } from '@grafana/data';

export interface PromMatrixResult {
  metric: Labels;
  values: Array<[number, string]>;
}

export interface PromVectorResult {
  metric: Labels;
  value: [number, string];
}

export interface PromResponse {
  status: 'success' | 'error';
  data: { resultType: 'matrix'; result: PromMatrixResult[] } | { resultType: 'vector'; result: PromVectorResult[] };
  error?: string;
}

/** Prometheus writes sample values as strings, including "NaN" and "+Inf". */
const sample = (v: string) => {
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
};

/** Display name as Grafana builds it without a legend: metric name and labels. */
function displayName(labels: Labels): string {
  const { __name__: name = '', ...rest } = labels;
  const pairs = Object.entries(rest).map(([k, v]) => `${k}="${v}"`);
  return pairs.length === 0 ? name || 'Value' : `${name}{${pairs.join(', ')}}`;
}

export function framesFromPrometheus(refId: string, response: PromResponse, stepSeconds?: number): DataFrame[] {
  if (response.status !== 'success') {
    throw new Error(`Prometheus answered ${response.status}: ${response.error ?? ''}`);
  }
  const data = response.data;
  const series =
    data.resultType === 'matrix'
      ? data.result.map((r) => ({ labels: r.metric, points: r.values }))
      : data.result.map((r) => ({ labels: r.metric, points: [r.value] }));
  return series.map(({ labels, points }) =>
    createDataFrame({
      refId,
      name: displayName(labels),
      meta: { type: DataFrameType.TimeSeriesMulti, typeVersion: [0, 1] },
      fields: [
        {
          name: 'Time',
          type: FieldType.time,
          values: points.map(([t]) => Math.round(t * 1000)),
          config: stepSeconds ? { interval: stepSeconds * 1000 } : {},
        },
        {
          name: 'Value',
          type: FieldType.number,
          values: points.map(([, v]) => sample(v)),
          labels: { ...labels },
          config: { displayNameFromDS: displayName(labels) },
        },
      ],
    })
  );
}

/** A Prometheus range answer built in memory, for tests that state their series exactly. */
export function matrix(series: Array<{ labels: Labels; values: Array<number | null> }>, startSeconds: number, stepSeconds: number): PromResponse {
  return {
    status: 'success',
    data: {
      resultType: 'matrix',
      result: series.map((s) => ({
        metric: s.labels,
        values: s.values.flatMap((v, i): Array<[number, string]> =>
          // Prometheus leaves out steps with no sample rather than sending a gap.
          v === null ? [] : [[startSeconds + i * stepSeconds, String(v)]]
        ),
      })),
    },
  };
}

/** Frames for one query, as the panel receives them, from series stated point by point. */
export function promFrames(
  refId: string,
  series: Array<{ labels: Labels; values: Array<number | null> }>,
  startSeconds = 1_700_000_000,
  stepSeconds = 15
): DataFrame[] {
  return framesFromPrometheus(refId, matrix(series, startSeconds, stepSeconds), stepSeconds);
}
