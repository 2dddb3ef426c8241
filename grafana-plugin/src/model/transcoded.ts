import { Reducer } from '../types';
import { reduce, Series, SeriesByRefId } from './series';

/**
 * REST calls the sidecar served through its JSON transcoder (`--transcode`, `--split`): they keep
 * `protocol="rest"` on every call metric, so their latency and errors are inside the REST column
 * and cannot be separated from it (docs/metrics.md, "Translated calls"). What the contract does
 * tell apart is how many of them there were, per operation
 * (`rpcscope_translated_calls_total{translation="rest_to_grpc"}`), and how long translating took
 * (`rpcscope_translation_seconds`, per translation, not per operation). The "transcoded" column
 * shows those: the transcoded calls per second, their share of the operation's REST calls, and the
 * translation time.
 */
export const TRANSCODED_REFID = 'transcoded';
export const TRANSLATION_P50_REFID = 'translation_p50';
export const TRANSLATION_P99_REFID = 'translation_p99';

export const TRANSCODED_QUERIES = [
  {
    refId: TRANSCODED_REFID,
    labels: ['operation'],
    example: 'sum by (operation) (rate(rpcscope_translated_calls_total{translation="rest_to_grpc"}[$__rate_interval]))',
  },
  {
    refId: TRANSLATION_P50_REFID,
    labels: [],
    example:
      'histogram_quantile(0.5, sum by (le) (rate(rpcscope_translation_seconds_bucket{translation="rest_to_grpc"}[$__rate_interval])))',
  },
  {
    refId: TRANSLATION_P99_REFID,
    labels: [],
    example:
      'histogram_quantile(0.99, sum by (le) (rate(rpcscope_translation_seconds_bucket{translation="rest_to_grpc"}[$__rate_interval])))',
  },
] as const;

export interface TranscodedCell {
  /** Transcoded calls per second. */
  rate: number | null;
  /** Of the operation's REST calls, the part that went through the transcoder, 0–1; null without a REST rate. */
  share: number | null;
  series: Series;
}

export interface TranscodedColumn {
  byOperation: Map<string, TranscodedCell>;
  /** Time spent translating one call, over every operation; null without the query. */
  translationP50: number | null;
  translationP99: number | null;
}

/** The single series of a refId that carries no per-operation labels, reduced. */
function overall(byRefId: SeriesByRefId, refId: string, reducer: Reducer): number | null {
  const s = byRefId.get(refId)?.[0];
  return s ? reduce(s.values, reducer) : null;
}

/**
 * Null when no `transcoded` query answered: a sidecar without `--transcode` exports none of these
 * series, and the column would only say so in every row.
 *
 * `restRate` is the operation's REST calls per second (the `rate` query's REST cell), which the
 * share is taken of. Several `transcoded` series for one operation (by protocol, by pod) are summed.
 */
export function buildTranscoded(
  byRefId: SeriesByRefId,
  reducer: Reducer,
  restRate: (operation: string) => number | null
): TranscodedColumn | null {
  const list = byRefId.get(TRANSCODED_REFID);
  if (!list || list.length === 0) {
    return null;
  }
  const byOperation = new Map<string, TranscodedCell>();
  for (const s of list) {
    const operation = s.labels.operation;
    if (!operation) {
      continue;
    }
    const value = reduce(s.values, reducer);
    const seen = byOperation.get(operation);
    const rate = seen ? (seen.rate === null ? value : value === null ? seen.rate : seen.rate + value) : value;
    byOperation.set(operation, { rate, share: null, series: seen?.series ?? s });
  }
  for (const [operation, cell] of byOperation) {
    const rest = restRate(operation);
    // A share over 1 is two scrapes' worth of skew between the queries, not more calls than REST had.
    cell.share = cell.rate !== null && rest !== null && rest > 0 ? Math.min(1, cell.rate / rest) : null;
  }
  return {
    byOperation,
    translationP50: overall(byRefId, TRANSLATION_P50_REFID, reducer),
    translationP99: overall(byRefId, TRANSLATION_P99_REFID, reducer),
  };
}
