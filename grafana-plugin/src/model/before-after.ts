import { MetricKey, Reducer } from '../types';
import { compare, Delta, Thresholds } from './delta';
import { metricDef } from './metric-catalog';
import { integrateRate, reduce, Series, SeriesByRefId } from './series';

/** The comparison range's refId for a metric: the contract's `_before`, or Grafana's time comparison. */
export const BEFORE_SUFFIX = '_before';
export const COMPARE_SUFFIX = '-compare';

export function beforeRefId(byRefId: SeriesByRefId, metric: string): string | null {
  for (const refId of [metric + BEFORE_SUFFIX, metric + COMPARE_SUFFIX]) {
    if ((byRefId.get(refId)?.length ?? 0) > 0) {
      return refId;
    }
  }
  return null;
}

export interface BeforeAfterMetric {
  metric: MetricKey;
  before: number | null;
  after: number | null;
  delta: Delta | null;
}

export interface BeforeAfterRow {
  operation: string;
  /** Protocol on each side; they differ when a migration moved the operation to another protocol. */
  protocolBefore: string | null;
  protocolAfter: string | null;
  metrics: BeforeAfterMetric[];
  /** Calls counted from the `rate` queries over each range; null without them. */
  callsBefore: number | null;
  callsAfter: number | null;
  /** Either side has fewer calls than minCalls (or none): the deltas may be noise. */
  lowCalls: boolean;
}

export interface BeforeAfterModel {
  metrics: MetricKey[];
  rows: BeforeAfterRow[];
  /** Both `rate` and its comparison query are there, so call counts are known. */
  callsKnown: boolean;
  minCalls: number;
  unlabelled: string[];
}

export interface BeforeAfterOptions extends Thresholds {
  metrics: readonly MetricKey[];
  reducer: Reducer;
  minCalls: number;
  /** Length of the panel's range: what an instant query's single point stands for. */
  rangeSeconds: number;
}

type Side = Map<string, Map<string, Map<MetricKey, number | null>>>; // operation -> protocol -> metric -> value

const protocolOf = (s: Series) => s.labels.protocol ?? '';

function collect(side: Side, list: readonly Series[], metric: MetricKey, reducer: Reducer, unlabelled: Set<string>) {
  for (const s of list) {
    const operation = s.labels.operation;
    if (!operation) {
      unlabelled.add(s.refId);
      continue;
    }
    let byProtocol = side.get(operation);
    if (!byProtocol) {
      byProtocol = new Map();
      side.set(operation, byProtocol);
    }
    const protocol = protocolOf(s);
    let values = byProtocol.get(protocol);
    if (!values) {
      values = new Map();
      byProtocol.set(protocol, values);
    }
    if (!values.has(metric)) {
      values.set(metric, reduce(s.values, reducer));
    }
  }
}

type Calls = Map<string, Map<string, number>>; // operation -> protocol -> calls

function countCalls(list: readonly Series[] | undefined, rangeSeconds: number): Calls {
  const calls: Calls = new Map();
  for (const s of list ?? []) {
    const operation = s.labels.operation;
    if (!operation) {
      continue;
    }
    let byProtocol = calls.get(operation);
    if (!byProtocol) {
      byProtocol = new Map();
      calls.set(operation, byProtocol);
    }
    const protocol = protocolOf(s);
    byProtocol.set(protocol, (byProtocol.get(protocol) ?? 0) + integrateRate(s, rangeSeconds));
  }
  return calls;
}

/**
 * Calls behind one row. The `rate` query may be grouped more coarsely than the metric queries
 * (by operation alone), or more finely: use the row's protocol where the counts have it, else
 * the operation's total.
 */
function callsFor(calls: Calls, operation: string, protocol: string): number {
  const byProtocol = calls.get(operation);
  if (!byProtocol) {
    return 0;
  }
  const exact = byProtocol.get(protocol);
  if (exact !== undefined) {
    return exact;
  }
  const unsplit = byProtocol.get('');
  if (unsplit !== undefined) {
    return unsplit;
  }
  let total = 0;
  if (protocol === '') {
    byProtocol.forEach((n) => (total += n));
  }
  return total;
}

/**
 * Which protocol on one side goes with which on the other: the same protocol where both have
 * it; and when exactly one protocol is left on each side, those two, because that is an
 * operation that moved (REST before, gRPC after).
 */
function pairProtocols(before: string[], after: string[]): Array<[string | null, string | null]> {
  const pairs: Array<[string | null, string | null]> = [];
  const leftBefore = before.filter((p) => !after.includes(p));
  const leftAfter = after.filter((p) => !before.includes(p));
  for (const p of after) {
    if (before.includes(p)) {
      pairs.push([p, p]);
    }
  }
  if (leftBefore.length === 1 && leftAfter.length === 1) {
    pairs.push([leftBefore[0]!, leftAfter[0]!]);
  } else {
    leftBefore.forEach((p) => pairs.push([p, null]));
    leftAfter.forEach((p) => pairs.push([null, p]));
  }
  return pairs;
}

export function buildBeforeAfter(byRefId: SeriesByRefId, opts: BeforeAfterOptions): BeforeAfterModel {
  const before: Side = new Map();
  const after: Side = new Map();
  const metrics: MetricKey[] = [];
  const unlabelled = new Set<string>();

  for (const metric of opts.metrics) {
    const current = byRefId.get(metric);
    const previousRef = beforeRefId(byRefId, metric);
    if (!current?.length && !previousRef) {
      continue;
    }
    metrics.push(metric);
    collect(after, current ?? [], metric, opts.reducer, unlabelled);
    if (previousRef) {
      collect(before, byRefId.get(previousRef) ?? [], metric, opts.reducer, unlabelled);
    }
  }

  const rateBeforeRef = beforeRefId(byRefId, 'rate');
  const callsKnown = (byRefId.get('rate')?.length ?? 0) > 0 && rateBeforeRef !== null;
  const callsAfter = countCalls(byRefId.get('rate'), opts.rangeSeconds);
  const callsBefore = countCalls(rateBeforeRef ? byRefId.get(rateBeforeRef) : undefined, opts.rangeSeconds);

  const rows: BeforeAfterRow[] = [];
  const operations = new Set([...before.keys(), ...after.keys()]);
  for (const operation of operations) {
    const b = before.get(operation) ?? new Map<string, Map<MetricKey, number | null>>();
    const a = after.get(operation) ?? new Map<string, Map<MetricKey, number | null>>();
    for (const [pb, pa] of pairProtocols([...b.keys()], [...a.keys()])) {
      const vb = pb === null ? undefined : b.get(pb);
      const va = pa === null ? undefined : a.get(pa);
      const cells = metrics
        .map((metric): BeforeAfterMetric => {
          const x = vb?.get(metric) ?? null;
          const y = va?.get(metric) ?? null;
          const delta = x !== null && y !== null ? compare(y, x, metricDef(metric), opts) : null;
          return { metric, before: x, after: y, delta };
        })
        // As in protocols mode, a metric with no value on either side is left out.
        .filter((m) => m.before !== null || m.after !== null);
      if (cells.length === 0) {
        continue;
      }
      const nb = callsKnown && pb !== null ? callsFor(callsBefore, operation, pb) : null;
      const na = callsKnown && pa !== null ? callsFor(callsAfter, operation, pa) : null;
      const lowCalls = callsKnown && ((nb ?? 0) < opts.minCalls || (na ?? 0) < opts.minCalls);
      rows.push({ operation, protocolBefore: pb, protocolAfter: pa, metrics: cells, callsBefore: nb, callsAfter: na, lowCalls });
    }
  }

  const traffic = (r: BeforeAfterRow) => Math.max(r.callsAfter ?? -1, r.callsBefore ?? -1);
  rows.sort(
    (x, y) =>
      traffic(y) - traffic(x) ||
      x.operation.localeCompare(y.operation) ||
      (x.protocolAfter ?? x.protocolBefore ?? '').localeCompare(y.protocolAfter ?? y.protocolBefore ?? '')
  );
  return { metrics, rows, callsKnown, minCalls: opts.minCalls, unlabelled: [...unlabelled].sort() };
}
