// RPC overview: what each service and method is doing now — rate, errors,
// latency, streams, resets and deadlines — for one direction of traffic.
import { dashboard, row, stat, timeseries, type Dashboard, type QuerySpec } from './model.ts';
import { DIRECTION, METHOD, SCOPE, deadlineMissRatio, quantile, ratio, sumGauge, sumRate, type Matchers } from './promql.ts';
import {
  clusterVariable,
  datasourceVariable,
  directionVariable,
  methodOfOperationVariable,
  namespaceVariable,
  operationVariable,
  podVariable,
  serviceVariable,
} from './variables.ts';

/**
 * Series without an `operation` label (in flight, streams, messages, resets,
 * deadlines) follow the operation picked through `method`, whose All is the
 * list of that operation's methods.
 */
const CALLS: Matchers = [...DIRECTION, ...SCOPE, ...METHOD];
/** rpcscope_calls_total and rpcscope_call_duration_seconds carry `operation` itself. */
const OP_CALLS: Matchers = [...CALLS, 'operation=~"$operation"'];
const NOT_OK: Matchers = [...OP_CALLS, 'code!="OK"'];

/** A latency quantile with its exemplars: with tracing on, each bucket links to a trace of a call in it. */
function latency(q: number, labels: string[], legend: string): QuerySpec {
  return { expr: quantile(q, labels, 'rpcscope_call_duration_seconds', OP_CALLS), legend, exemplar: true };
}

export function rpcOverview(): Dashboard {
  return dashboard({
    uid: 'rpcscope-rpc-overview',
    title: 'rpcscope / RPC overview',
    description: 'Per-service and per-method call rate, errors, latency, streams, resets and deadlines, as rpcscope sidecars see them.',
    variables: [
      datasourceVariable(),
      clusterVariable(),
      namespaceVariable(),
      serviceVariable(),
      podVariable(),
      operationVariable(),
      methodOfOperationVariable(),
      directionVariable(),
    ],
    items: [
      stat({
        title: 'Calls/s',
        description: 'Finished calls per second, every protocol, unary and streaming.',
        unit: 'reqps',
        queries: [{ expr: sumRate([], 'rpcscope_calls_total', OP_CALLS), legend: 'calls/s' }],
      }),
      stat({
        title: 'Non-OK ratio',
        description: 'Share of calls that ended with any code but OK (REST statuses are mapped to gRPC codes).',
        unit: 'percentunit',
        red: 0.05,
        queries: [{ expr: ratio([], { metric: 'rpcscope_calls_total', matchers: NOT_OK }, { metric: 'rpcscope_calls_total', matchers: OP_CALLS }), legend: 'non-OK' }],
      }),
      stat({
        title: 'p99 latency',
        description: 'Unary-shaped calls, from request headers to response end.',
        unit: 's',
        red: 1,
        queries: [{ expr: quantile(0.99, [], 'rpcscope_call_duration_seconds', OP_CALLS), legend: 'p99' }],
      }),
      stat({
        title: 'In flight',
        description: 'Calls and streams open now.',
        unit: 'short',
        queries: [{ expr: sumGauge([], 'rpcscope_calls_active', CALLS), legend: 'in flight' }],
      }),

      row('Per service'),
      timeseries({
        title: 'Call rate by service',
        description: 'Finished calls per second per service and protocol.',
        unit: 'reqps',
        stack: true,
        queries: [{ expr: sumRate(['namespace', 'service', 'protocol'], 'rpcscope_calls_total', OP_CALLS), legend: '{{namespace}}/{{service}} {{protocol}}' }],
      }),
      timeseries({
        title: 'Non-OK ratio by service',
        description: 'Share of calls per service that did not end OK.',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: ratio(['namespace', 'service'], { metric: 'rpcscope_calls_total', matchers: NOT_OK }, { metric: 'rpcscope_calls_total', matchers: OP_CALLS }),
            legend: '{{namespace}}/{{service}}',
          },
        ],
      }),
      timeseries({
        title: 'Latency by service',
        description: 'p50 and p99 of unary-shaped calls per service.',
        unit: 's',
        queries: [
          latency(0.5, ['namespace', 'service'], 'p50 {{namespace}}/{{service}}'),
          latency(0.99, ['namespace', 'service'], 'p99 {{namespace}}/{{service}}'),
        ],
      }),
      timeseries({
        title: 'Calls by code',
        description: 'Finished calls per second per status code (gRPC code names for every protocol).',
        unit: 'reqps',
        stack: true,
        queries: [{ expr: sumRate(['code'], 'rpcscope_calls_total', OP_CALLS), legend: '{{code}}' }],
      }),

      row('Per method'),
      timeseries({
        title: 'Call rate by method',
        description: 'Methods past --max-methods fold into _OTHER.',
        unit: 'reqps',
        queries: [{ expr: sumRate(['method'], 'rpcscope_calls_total', OP_CALLS), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'Non-OK ratio by method',
        description: 'Share of calls per method that did not end OK.',
        unit: 'percentunit',
        min: 0,
        queries: [{ expr: ratio(['method'], { metric: 'rpcscope_calls_total', matchers: NOT_OK }, { metric: 'rpcscope_calls_total', matchers: OP_CALLS }), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'p99 latency by method',
        description: 'Unary-shaped calls only; streams are below.',
        unit: 's',
        queries: [latency(0.99, ['method'], '{{method}}')],
      }),
      timeseries({
        title: 'p50 latency by method',
        description: 'Unary-shaped calls only.',
        unit: 's',
        queries: [latency(0.5, ['method'], '{{method}}')],
      }),

      row('Streams'),
      timeseries({
        title: 'Open calls and streams by method',
        description: 'In-flight calls; long-lived streams keep this up between calls.',
        unit: 'short',
        queries: [{ expr: sumGauge(['method'], 'rpcscope_calls_active', CALLS), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'Stream lifetime p95',
        description: 'Lifetime of finished streaming calls by stream type.',
        unit: 's',
        queries: [{ expr: quantile(0.95, ['stream_type'], 'rpcscope_stream_duration_seconds', CALLS), legend: '{{stream_type}}' }],
      }),
      timeseries({
        title: 'Time to first message p95',
        description: 'From request headers to the first response message of a streaming call.',
        unit: 's',
        queries: [{ expr: quantile(0.95, ['method'], 'rpcscope_stream_first_message_seconds', CALLS), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'Messages/s',
        description: 'Length-prefixed messages (gRPC, gRPC-Web, Connect streaming) by direction of flow.',
        unit: 'short',
        queries: [{ expr: sumRate(['method', 'flow'], 'rpcscope_messages_total', CALLS), legend: '{{method}} {{flow}}' }],
      }),

      row('Resets and deadlines'),
      timeseries({
        title: 'Stream resets/s',
        description: 'RST_STREAM frames by who sent them and their HTTP/2 error code. CANCEL from client: callers giving up; REFUSED_STREAM from upstream: an overloaded app.',
        unit: 'short',
        queries: [{ expr: sumRate(['side', 'error_code'], 'rpcscope_stream_resets_total', CALLS), legend: '{{side}} {{error_code}}' }],
      }),
      timeseries({
        title: 'Deadline misses/s',
        description: 'Calls that did not finish inside their deadline, by how the miss was detected.',
        unit: 'short',
        queries: [{ expr: sumRate(['method', 'detected_by'], 'rpcscope_deadline_exceeded_total', CALLS), legend: '{{method}} {{detected_by}}' }],
      }),
      timeseries({
        title: 'Deadline miss ratio by method',
        description: 'Missed: calls that carried a deadline and ended after it, over calls that carried one. Ended DEADLINE_EXCEEDED: calls with that code, deadline or not (an upstream\'s own deadline), over all calls.',
        unit: 'percentunit',
        min: 0,
        queries: [
          { expr: deadlineMissRatio(['method'], CALLS), legend: 'missed {{method}}' },
          {
            expr: ratio(['method'], { metric: 'rpcscope_calls_total', matchers: [...OP_CALLS, 'code="DEADLINE_EXCEEDED"'] }, { metric: 'rpcscope_calls_total', matchers: OP_CALLS }),
            legend: 'ended DEADLINE_EXCEEDED {{method}}',
          },
        ],
      }),
      timeseries({
        title: 'Calls without a deadline/s',
        description: 'gRPC-family calls that carried neither grpc-timeout nor connect-timeout-ms.',
        unit: 'reqps',
        queries: [{ expr: sumRate(['method'], 'rpcscope_calls_without_deadline_total', CALLS), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'Deadline used (p50, p90)',
        description: 'Elapsed over requested time at the end of calls with a deadline; above 1 is a miss.',
        unit: 'percentunit',
        queries: [
          { expr: quantile(0.5, [], 'rpcscope_deadline_used_ratio', CALLS), legend: 'p50' },
          { expr: quantile(0.9, [], 'rpcscope_deadline_used_ratio', CALLS), legend: 'p90' },
        ],
      }),
      timeseries({
        title: 'Requested deadline p50',
        description: 'The budget callers ask for, per method.',
        unit: 's',
        queries: [{ expr: quantile(0.5, ['method'], 'rpcscope_deadline_requested_seconds', CALLS), legend: '{{method}}' }],
      }),
      timeseries({
        title: 'Invalid deadline headers/s',
        description: 'Calls whose deadline header could not be parsed; they are proxied as if they carried none.',
        unit: 'reqps',
        queries: [{ expr: sumRate(['protocol'], 'rpcscope_deadline_header_invalid_total', [...DIRECTION, ...SCOPE]), legend: '{{protocol}}' }],
      }),
      timeseries({
        title: 'Sidecar overhead p99',
        description: 'Time the sidecar itself added to a call (call duration less the upstream\'s part).',
        unit: 's',
        queries: [{ expr: quantile(0.99, ['protocol'], 'rpcscope_proxy_overhead_seconds', [...DIRECTION, ...SCOPE]), legend: '{{protocol}}' }],
      }),
    ],
  });
}
