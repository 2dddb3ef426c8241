import { MetricKey } from '../types';
import { Delta, Thresholds } from './delta';
import { ProtocolMatrix } from './protocols';
import { integrateRate, SeriesByRefId } from './series';
import { significance } from './significance';

/** One significant change of one metric of one protocol against the baseline. */
export interface HeadlineChange {
  metric: MetricKey;
  delta: Delta;
  score: number;
}

/** An operation's verdict: the protocol that differs most from the baseline, and how. */
export interface ProtocolVerdict {
  operation: string;
  protocol: string;
  baseline: string;
  /** The protocol's significant changes, largest first (at most `maxChanges`). */
  changes: HeadlineChange[];
  /** The largest change's score: what orders the verdicts. */
  score: number;
}

export interface ProtocolHeadline {
  /** Operations with a significant difference, largest first. */
  verdicts: ProtocolVerdict[];
  /** Operations compared with no significant difference. */
  unchanged: string[];
  /** "Operation/protocol" pairs left out because one side had fewer than minCalls calls. */
  fewCalls: string[];
  /** Whether the `rate` query was there to count calls with. */
  callsKnown: boolean;
}

export interface ProtocolHeadlineOptions extends Thresholds {
  minCalls: number;
  rangeSeconds: number;
  /** Changes named per operation. */
  maxChanges?: number;
}

/**
 * Call volume is never a headline change: how many calls a protocol carries says nothing about
 * the protocol (a migration moves calls from one to another). Latency, errors and bytes per call
 * are what the headline ranks, as `rpcscope diagnose` ranks its findings; calls stay in the table.
 */
const VOLUME_METRICS: ReadonlySet<MetricKey> = new Set<MetricKey>(['rate']);

/** Calls per operation and protocol, integrated from the `rate` series over the range. */
function countCalls(series: SeriesByRefId, rangeSeconds: number): Map<string, number> | null {
  const list = series.get('rate');
  if (!list?.length) {
    return null;
  }
  const calls = new Map<string, number>();
  for (const s of list) {
    const { operation, protocol } = s.labels;
    if (operation && protocol) {
      const key = `${operation}\u0000${protocol}`;
      calls.set(key, (calls.get(key) ?? 0) + integrateRate(s, rangeSeconds));
    }
  }
  return calls;
}

/**
 * Per operation, the protocol whose changes against the baseline span the most thresholds, with
 * those changes largest first; operations ordered by that largest change. A protocol is left
 * out where it or the baseline carried fewer than `minCalls` calls over the range: a p99 of a
 * few dozen calls differs from any other by chance.
 */
export function protocolHeadline(matrix: ProtocolMatrix, series: SeriesByRefId, opts: ProtocolHeadlineOptions): ProtocolHeadline {
  const maxChanges = opts.maxChanges ?? 3;
  const calls = countCalls(series, opts.rangeSeconds);
  const enough = (operation: string, protocol: string) =>
    calls === null || (calls.get(`${operation}\u0000${protocol}`) ?? 0) >= opts.minCalls;
  const verdicts: ProtocolVerdict[] = [];
  const unchanged: string[] = [];
  const fewCalls: string[] = [];
  if (!matrix.hasBaseline) {
    return { verdicts, unchanged, fewCalls, callsKnown: calls !== null };
  }

  for (const op of matrix.operations) {
    let best: ProtocolVerdict | null = null;
    let compared = false;
    matrix.protocols.forEach((protocol, column) => {
      if (protocol === matrix.baseline || op.rows.every((r) => r.cells[column]?.delta == null)) {
        return;
      }
      if (!enough(op.operation, protocol) || !enough(op.operation, matrix.baseline)) {
        fewCalls.push(`${op.operation}/${protocol}`);
        return;
      }
      compared = true;
      const changes: HeadlineChange[] = [];
      for (const row of op.rows) {
        const delta = VOLUME_METRICS.has(row.metric) ? null : row.cells[column]?.delta;
        const score = delta ? significance(delta, opts) : 0;
        if (delta && score > 0) {
          changes.push({ metric: row.metric, delta, score });
        }
      }
      if (changes.length === 0) {
        return;
      }
      changes.sort((a, b) => b.score - a.score);
      const score = changes[0]!.score;
      if (!best || score > best.score) {
        best = { operation: op.operation, protocol, baseline: matrix.baseline, changes: changes.slice(0, maxChanges), score };
      }
    });
    if (best) {
      verdicts.push(best);
    } else if (compared) {
      unchanged.push(op.operation);
    }
  }
  verdicts.sort((a, b) => b.score - a.score || a.operation.localeCompare(b.operation));
  return { verdicts, unchanged, fewCalls, callsKnown: calls !== null };
}
