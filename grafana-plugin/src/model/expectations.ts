import { MetricKey, Mode, PanelOptions } from '../types';
import { BEFORE_SUFFIX, beforeRefId } from './before-after';
import { metricDef } from './metric-catalog';
import { detectPodLabel, POD_LABELS } from './pods';
import { labelNames, SeriesByRefId } from './series';

export interface QueryExpectation {
  refId: string;
  labels: string[];
  example: string;
}

/** What a mode reads, told to the user when the data does not give it. */
export interface ModeExpectation {
  mode: Mode;
  title: string;
  /** One sentence: which refIds, which labels. */
  summary: string;
  queries: QueryExpectation[];
}

const POD_RATE = 'sum by (pod) (rate(rpcscope_calls_total{direction="inbound"}[$__rate_interval]))';

export const POD_QUERIES: QueryExpectation[] = [
  { refId: 'rate', labels: ['pod'], example: POD_RATE },
  {
    refId: 'share',
    labels: ['pod'],
    example: `${POD_RATE} / scalar(sum(rate(rpcscope_calls_total{direction="inbound"}[$__rate_interval])))`,
  },
  { refId: 'connections', labels: ['pod'], example: 'sum by (pod) (rpcscope_connections_active{side="downstream"})' },
  {
    refId: 'calls_per_connection',
    labels: ['pod'],
    example:
      'sum by (pod) (rate(rpcscope_connection_calls_sum{side="downstream"}[$__rate_interval])) / sum by (pod) (rate(rpcscope_connection_calls_count{side="downstream"}[$__rate_interval]))',
  },
  { refId: 'skew', labels: [], example: `max(${POD_RATE}) / avg(${POD_RATE})` },
];

export function expectationFor(mode: Mode, metrics: readonly MetricKey[]): ModeExpectation {
  const shown = metrics.length > 0 ? metrics : (['p99'] as MetricKey[]);
  switch (mode) {
    case 'protocols':
      return {
        mode,
        title: 'Protocols',
        summary: `Protocols mode reads queries with refId ${shown.join(', ')}, whose series carry the labels operation and protocol.`,
        queries: shown.map((m) => ({ refId: m, labels: ['operation', 'protocol'], example: metricDef(m).example })),
      };
    case 'beforeAfter':
      return {
        mode,
        title: 'Before/after',
        summary:
          `Before/after mode reads each of ${shown.join(', ')} twice: the refId itself over the panel's range, and ` +
          `the refId with ${BEFORE_SUFFIX} over the earlier range (the same query with offset, or @ the migration time). ` +
          'Series carry the label operation, and protocol where the comparison is per protocol. ' +
          'The rate pair also counts the calls behind each delta.',
        queries: shown.flatMap((m) => [
          { refId: m, labels: ['operation', 'protocol'], example: metricDef(m).example },
          {
            refId: m + BEFORE_SUFFIX,
            labels: ['operation', 'protocol'],
            example: metricDef(m).example.replace(/\[\$__rate_interval\]/g, '[$__rate_interval] offset 7d'),
          },
        ]),
      };
    case 'pods':
      return {
        mode,
        title: 'Pods',
        summary:
          `Pods mode reads refId rate or share by pod (or by upstream for outbound sidecars), and optionally ` +
          'connections and calls_per_connection by the same label, and skew as a single value.',
        queries: POD_QUERIES,
      };
  }
}

export interface FoundQuery {
  refId: string;
  labels: string[];
}

export interface Diagnosis {
  expectation: ModeExpectation;
  /** What is wrong, in a sentence. */
  problem: string;
  found: FoundQuery[];
}

function found(byRefId: SeriesByRefId): FoundQuery[] {
  return [...byRefId.entries()]
    .map(([refId, list]) => ({ refId: refId || '(no refId)', labels: labelNames(list) }))
    .sort((a, b) => a.refId.localeCompare(b.refId));
}

const hasLabels = (byRefId: SeriesByRefId, refId: string, labels: string[]) =>
  (byRefId.get(refId) ?? []).some((s) => labels.every((l) => Boolean(s.labels[l])));

/** Null when the mode has something to draw; otherwise why not, and what it needs. */
export function diagnose(
  byRefId: SeriesByRefId,
  options: Pick<PanelOptions, 'mode' | 'metrics' | 'podLabel'>,
  queried: readonly string[] | null = null
): Diagnosis | null {
  const expectation = expectationFor(options.mode, options.metrics);
  const fail = (problem: string): Diagnosis => ({ expectation, problem, found: found(byRefId) });
  if (byRefId.size === 0) {
    return queried && queried.length > 0
      ? fail(`The queries (refId ${queried.join(', ')}) returned no data, and none has a refId this mode reads.`)
      : fail('The queries returned no data.');
  }
  switch (options.mode) {
    case 'protocols': {
      const present = options.metrics.filter((m) => (byRefId.get(m)?.length ?? 0) > 0);
      if (present.length === 0) {
        return fail(`No query has refId ${options.metrics.join(', ') || 'p99'}.`);
      }
      if (!present.some((m) => hasLabels(byRefId, m, ['operation', 'protocol']))) {
        return fail(`The series of ${present.join(', ')} lack the label operation or protocol.`);
      }
      return null;
    }
    case 'beforeAfter': {
      const present = options.metrics.filter((m) => (byRefId.get(m)?.length ?? 0) > 0);
      const paired = present.filter((m) => beforeRefId(byRefId, m) !== null);
      if (present.length === 0) {
        return fail(`No query has refId ${options.metrics.join(', ') || 'p99'}.`);
      }
      if (paired.length === 0) {
        return fail(
          `No comparison query: add ${present.map((m) => m + BEFORE_SUFFIX).join(', ')} (or turn on Grafana's time comparison).`
        );
      }
      if (!paired.some((m) => hasLabels(byRefId, m, ['operation']))) {
        return fail(`The series of ${paired.join(', ')} lack the label operation.`);
      }
      return null;
    }
    case 'pods': {
      const traffic = [...(byRefId.get('share') ?? []), ...(byRefId.get('rate') ?? [])];
      if (traffic.length === 0) {
        return fail('No query has refId rate or share.');
      }
      const label = detectPodLabel(traffic, options.podLabel);
      if (!label || !traffic.some((s) => Boolean(s.labels[label]))) {
        const wanted = options.podLabel ? options.podLabel : POD_LABELS.join(', ');
        return fail(`The series of rate/share carry none of the labels ${wanted}.`);
      }
      return null;
    }
  }
}
