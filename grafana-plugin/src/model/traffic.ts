import { MetricKey, Mode } from '../types';
import { BEFORE_SUFFIX, COMPARE_SUFFIX } from './before-after';
import { POD_QUERIES } from './expectations';
import { SeriesByRefId } from './series';

/**
 * Why a panel whose queries are right has nothing to show: `no-series` (Prometheus answered
 * every query with nothing: no sidecar saw a call in the range) or `all-zero` (the series exist,
 * from earlier calls, but every point in the range is 0 or undefined, as a rate or a quantile of
 * an idle counter is). Either is an idle service, not a mistake in the queries, and gets Grafana's
 * own empty state rather than the panel's query help.
 */
export type NoTraffic = 'no-series' | 'all-zero';

/** The refIds a mode reads; a query under any other refId is one the mode would ignore. */
export function refIdsRead(mode: Mode, metrics: readonly MetricKey[]): Set<string> {
  if (mode === 'pods') {
    return new Set(POD_QUERIES.map((q) => q.refId));
  }
  const shown = metrics.length > 0 ? metrics : (['p99'] as MetricKey[]);
  if (mode === 'beforeAfter') {
    return new Set(shown.flatMap((m) => [m, m + BEFORE_SUFFIX, m + COMPARE_SUFFIX]));
  }
  return new Set(shown);
}

export interface TrafficInput {
  mode: Mode;
  metrics: readonly MetricKey[];
  /**
   * The refIds of the queries that ran (`data.request.targets`, hidden ones left out); null when
   * Grafana did not say.
   */
  queried: readonly string[] | null;
}

const isTraffic = (v: number | null | undefined) => typeof v === 'number' && Number.isFinite(v) && v !== 0;

/**
 * Null when there is traffic to show, or when the emptiness is the queries' fault (no query has
 * a refId the mode reads), which the query help explains instead.
 */
export function noTraffic(byRefId: SeriesByRefId, input: TrafficInput): NoTraffic | null {
  const read = refIdsRead(input.mode, input.metrics);
  if (byRefId.size === 0) {
    if (input.queried !== null && !input.queried.some((r) => read.has(r))) {
      return null;
    }
    return 'no-series';
  }
  let readAny = false;
  for (const [refId, list] of byRefId) {
    if (!read.has(refId)) {
      continue;
    }
    for (const s of list) {
      readAny = true;
      for (let i = 0; i < s.values.length; i++) {
        if (isTraffic(s.values[i])) {
          return null;
        }
      }
    }
  }
  return readAny ? 'all-zero' : null;
}
