// The figures the demo shows, read from what the sidecars served on /metrics
// (through MetricsHistory): per operation and protocol latency, rate and
// errors; per pod share and the skew figure; the balanced client's skew;
// resets, deadline misses and calls without a deadline.
import type { MetricsHistory } from './metrics-history.ts';
import { maxOverMean, type StoryTimeline } from './story-traffic.ts';

export const INBOUND = { direction: 'inbound' } as const;
/** The skew past which the pods' load counts as pinned (the rules' alert threshold). */
export const SKEW_THRESHOLD = 1.5;
export const PROTOCOL_NAMES: Record<string, string> = { rest: 'REST', grpc: 'gRPC', connect: 'Connect', grpc_web: 'gRPC-Web', trpc: 'tRPC' };
const PROTOCOL_ORDER = ['rest', 'grpc', 'connect', 'grpc_web', 'trpc'];

/** `order.v1.OrderService/GetOrder` -> `GetOrder`. */
export const shortOperation = (operation: string): string => operation.slice(operation.lastIndexOf('/') + 1);

export interface ProtocolRow {
  operation: string;
  protocol: string;
  calls: number;
  /** Seconds; NaN where the window holds no unary-shaped call. */
  p50: number;
  p99: number;
  rate: number;
  errorRatio: number;
  /** Mean response body per call, bytes (a call answered without a body counts as 0). */
  responseBytes: number;
}

/** Per operation and protocol over [from, to] (epoch ms), inbound calls only, busiest operation first. */
export function protocolRows(h: MetricsHistory, fromMs: number, toMs: number): ProtocolRow[] {
  const by = ['operation', 'protocol'];
  const calls = h.increase('rpcscope_calls_total', INBOUND, fromMs, toMs, by);
  const errors = h.increase('rpcscope_calls_total', { ...INBOUND, code: (c) => c !== 'OK' }, fromMs, toMs, by);
  const p50 = h.quantile(0.5, 'rpcscope_call_duration_seconds', INBOUND, fromMs, toMs, by);
  const p99 = h.quantile(0.99, 'rpcscope_call_duration_seconds', INBOUND, fromMs, toMs, by);
  // The mean size of an answer, from what the contract gives at every detail
  // level: bytes over the calls that got one. A call its client gave up on
  // (cancelled, or past its deadline) carries none, and on a loaded machine
  // such calls would pull every protocol's mean down by their share.
  const bytes = h.increase('rpcscope_call_bytes_total', { ...INBOUND, flow: 'response' }, fromMs, toMs, by);
  const unanswered = h.increase('rpcscope_calls_total', { ...INBOUND, code: (c) => c === 'CANCELLED' || c === 'DEADLINE_EXCEEDED' }, fromMs, toMs, by);
  const seconds = Math.max(1, (toMs - fromMs) / 1000);
  const rows: ProtocolRow[] = [];
  for (const [key, n] of Object.entries(calls)) {
    if (n <= 0) continue;
    const [operation = '', protocol = ''] = key.split(' | ');
    rows.push({
      operation: shortOperation(operation),
      protocol,
      calls: n,
      p50: p50[key] ?? NaN,
      p99: p99[key] ?? NaN,
      rate: n / seconds,
      errorRatio: (errors[key] ?? 0) / n,
      responseBytes: (bytes[key] ?? 0) / Math.max(1, n - (unanswered[key] ?? 0)),
    });
  }
  const perOperation = new Map<string, number>();
  for (const r of rows) perOperation.set(r.operation, (perOperation.get(r.operation) ?? 0) + r.calls);
  return rows.sort(
    (a, b) => perOperation.get(b.operation)! - perOperation.get(a.operation)! || a.operation.localeCompare(b.operation) || PROTOCOL_ORDER.indexOf(a.protocol) - PROTOCOL_ORDER.indexOf(b.protocol),
  );
}

export interface PodRow {
  pod: string;
  calls: number;
  share: number;
  rate: number;
  /** Client connections open on the pod's sidecar now. */
  connections: number;
}

export interface PodFigures {
  rows: PodRow[];
  /** max / mean of the per-pod call counts (every pod counted, idle ones as 0). */
  skew: number;
  /** The pod with the most calls. */
  top: string;
}

export function podFigures(h: MetricsHistory, pods: readonly string[], fromMs: number, toMs: number): PodFigures {
  const calls = h.increase('rpcscope_calls_total', INBOUND, fromMs, toMs, ['target']);
  const connections = h.gauge('rpcscope_connections_active', { side: 'downstream' }, ['target']);
  const total = pods.reduce((s, p) => s + (calls[p] ?? 0), 0);
  const seconds = Math.max(1, (toMs - fromMs) / 1000);
  const rows = pods.map((pod) => ({
    pod,
    calls: calls[pod] ?? 0,
    share: total === 0 ? 0 : (calls[pod] ?? 0) / total,
    rate: (calls[pod] ?? 0) / seconds,
    connections: connections[pod] ?? 0,
  }));
  const top = [...rows].sort((a, b) => b.calls - a.calls)[0]?.pod ?? '';
  return { rows, skew: maxOverMean(rows.map((r) => r.calls)), top };
}

export interface BalancedFigures {
  /** The outbound sidecar's rpcscope_load_skew_ratio (its last 30 s). */
  loadSkew: number;
  /** max / mean of its answered (OK) calls per endpoint over the window. */
  skew: number;
  perEndpoint: Record<string, number>;
}

export function balancedFigures(h: MetricsHistory, outbound: string, fromMs: number, toMs: number): BalancedFigures {
  // Answered calls only: a call refused by a restarting endpoint was not work that endpoint did.
  const perEndpoint = h.increase('rpcscope_upstream_calls_total', { target: outbound, code: 'OK' }, fromMs, toMs, ['upstream']);
  return {
    loadSkew: h.gauge('rpcscope_load_skew_ratio', { target: outbound })[''] ?? NaN,
    skew: maxOverMean(Object.values(perEndpoint)),
    perEndpoint,
  };
}

export interface EdgeFigures {
  /** `side | error_code` -> resets, inbound. */
  resets: Record<string, number>;
  goawaysSent: number;
  /** `detected_by` -> misses, inbound. */
  deadlineMisses: Record<string, number>;
  withoutDeadline: number;
}

export function edgeFigures(h: MetricsHistory, fromMs: number, toMs: number, pods: readonly string[]): EdgeFigures {
  const onPods = { target: (t: string) => pods.includes(t) };
  return {
    resets: h.increase('rpcscope_stream_resets_total', INBOUND, fromMs, toMs, ['side', 'error_code']),
    goawaysSent: h.total('rpcscope_http2_goaways_total', { ...onPods, side: 'proxy' }, fromMs, toMs),
    deadlineMisses: h.increase('rpcscope_deadline_exceeded_total', INBOUND, fromMs, toMs, ['detected_by']),
    withoutDeadline: h.total('rpcscope_calls_without_deadline_total', INBOUND, fromMs, toMs),
  };
}

/** Where the story is at `t` ms. */
export function phaseOf(t: number, timeline: StoryTimeline, rolledOut: boolean, restarting?: string): string {
  if (t < timeline.migratedMs) return 'REST to gRPC migration under way';
  if (t < timeline.remedyMs) return 'gRPC carries the storefront: one HTTP/2 connection, one pod';
  if (!rolledOut) return `rolling out --max-connection-age 1s, the pinned pod first${restarting ? `: restarting ${restarting}'s sidecar` : ''}`;
  return '--max-connection-age 1s on every pod: connections move on, the load spreads';
}

const sum = (o: Record<string, number>): number => Object.values(o).reduce((a, b) => a + b, 0);
export { sum };
