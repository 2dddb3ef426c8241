import { MetricKey, PROTOCOLS, Reducer } from '../types';
import { compare, Delta, Thresholds } from './delta';
import { metricDef } from './metric-catalog';
import { reduce, Series, SeriesByRefId } from './series';

export interface ProtocolCell {
  protocol: string;
  value: number | null;
  /** The series behind the value, for the sparkline; null where the protocol has none. */
  series: Series | null;
  /** Change against the baseline protocol's cell; null in the baseline column or without data. */
  delta: Delta | null;
}

export interface MetricRow {
  metric: MetricKey;
  /** Index-aligned with ProtocolMatrix.protocols. */
  cells: ProtocolCell[];
}

export interface OperationBlock {
  operation: string;
  /** Calls per second over every protocol, which orders the blocks busiest first. */
  rate: number | null;
  rows: MetricRow[];
}

export interface ProtocolMatrix {
  /** Column order: the baseline first, then docs/metrics.md's order, then any other value seen. */
  protocols: string[];
  baseline: string;
  hasBaseline: boolean;
  /** The chosen metrics that have data, in the chosen order. */
  metrics: MetricKey[];
  operations: OperationBlock[];
  /** refIds with series lacking `operation` or `protocol`; those series are left out. */
  unlabelled: string[];
  /** "p99 GetOrder/grpc" where a query returned several series for one cell (only the first is used). */
  duplicates: string[];
}

export interface ProtocolOptions extends Thresholds {
  metrics: readonly MetricKey[];
  baseline: string;
  reducer: Reducer;
}

const KNOWN_ORDER = new Map<string, number>(PROTOCOLS.map((p, i) => [p, i]));

export function orderProtocols(seen: Iterable<string>, baseline: string): string[] {
  const rank = (p: string) => (p === baseline ? -1 : (KNOWN_ORDER.get(p) ?? PROTOCOLS.length));
  return [...seen].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

export function buildProtocolMatrix(byRefId: SeriesByRefId, opts: ProtocolOptions): ProtocolMatrix {
  // operation -> metric -> protocol -> cell
  const table = new Map<string, Map<MetricKey, Map<string, ProtocolCell>>>();
  const protocols = new Set<string>();
  const metrics: MetricKey[] = [];
  const unlabelled: string[] = [];
  const duplicates: string[] = [];

  for (const metric of opts.metrics) {
    const list = byRefId.get(metric);
    if (!list || list.length === 0) {
      continue;
    }
    let used = false;
    for (const s of list) {
      const operation = s.labels.operation;
      const protocol = s.labels.protocol;
      if (!operation || !protocol) {
        if (!unlabelled.includes(metric)) {
          unlabelled.push(metric);
        }
        continue;
      }
      let byMetric = table.get(operation);
      if (!byMetric) {
        byMetric = new Map();
        table.set(operation, byMetric);
      }
      let byProtocol = byMetric.get(metric);
      if (!byProtocol) {
        byProtocol = new Map();
        byMetric.set(metric, byProtocol);
      }
      if (byProtocol.has(protocol)) {
        duplicates.push(`${metric} ${operation}/${protocol}`);
        continue;
      }
      byProtocol.set(protocol, { protocol, value: reduce(s.values, opts.reducer), series: s, delta: null });
      protocols.add(protocol);
      used = true;
    }
    if (used) {
      metrics.push(metric);
    }
  }

  const columns = orderProtocols(protocols, opts.baseline);
  const hasBaseline = protocols.has(opts.baseline);
  const operations: OperationBlock[] = [];

  for (const [operation, byMetric] of table) {
    const rows: MetricRow[] = [];
    for (const metric of metrics) {
      const def = metricDef(metric);
      const byProtocol = byMetric.get(metric);
      const reference = byProtocol?.get(opts.baseline)?.value ?? null;
      const cells = columns.map((protocol): ProtocolCell => {
        const cell = byProtocol?.get(protocol);
        if (!cell) {
          return { protocol, value: null, series: null, delta: null };
        }
        if (protocol !== opts.baseline && cell.value !== null && reference !== null) {
          cell.delta = compare(cell.value, reference, def, opts);
        }
        return cell;
      });
      // A metric no protocol has a value for says nothing about this operation (a streaming
      // method has no call-duration histogram, say): its row is left out rather than dashed.
      if (cells.some((c) => c.value !== null)) {
        rows.push({ metric, cells });
      }
    }
    if (rows.length === 0) {
      continue;
    }
    let rate: number | null = null;
    const rates = byMetric.get('rate');
    if (rates) {
      for (const cell of rates.values()) {
        if (cell.value !== null) {
          rate = (rate ?? 0) + cell.value;
        }
      }
    }
    operations.push({ operation, rate, rows });
  }

  operations.sort((a, b) => (b.rate ?? -1) - (a.rate ?? -1) || a.operation.localeCompare(b.operation));
  return { protocols: columns, baseline: opts.baseline, hasBaseline, metrics, operations, unlabelled, duplicates };
}
