// Protocol migration: the same logical operation over each protocol side by
// side, and now against a moment before the migration. `operation` is shared
// across protocols (a REST route and the RPC method it maps to), so the
// comparison is of like with like.
import { dashboard, protocolCompare, row, timeseries, type Dashboard, type QuerySpec } from './model.ts';
import { INBOUND, SCOPE, perCall, quantile, rateOrZero, ratio, resetsByOperation, sumRate, type At, type Matchers } from './promql.ts';
import {
  clusterVariable,
  compareVariable,
  datasourceVariable,
  methodVariable,
  namespaceVariable,
  operationVariable,
  podVariable,
  serviceVariable,
} from './variables.ts';

const OP = ['operation', 'protocol'];
const CALLS: Matchers = [...INBOUND, ...SCOPE, 'method=~"$method"', 'operation=~"$operation"'];
/** Resets carry no operation label; resetsByOperation narrows them through CALLS. */
const RESETS: Matchers = [...INBOUND, ...SCOPE, 'method=~"$method"'];
const BEFORE: At = { offset: '$compare' };
/**
 * Translated and shadow calls (`--transcode`, `--grpc-web-bridge`, `--shadow`)
 * carry `operation` (the RPC method) but no `method` or `direction`.
 */
const MIGRATED: Matchers = [...SCOPE, 'operation=~"$operation"'];

/** The panel plugin's query contract (grafana-plugin/README.md): one refId per figure, by operation and protocol. */
function compareQueries(at: At, suffix: string): (QuerySpec & { refId: string })[] {
  const q = (refId: string, expr: string): QuerySpec & { refId: string } => ({ refId: refId + suffix, expr, legend: '{{operation}} {{protocol}}' });
  return [
    q('p50', quantile(0.5, OP, 'rpcscope_call_duration_seconds', CALLS, at)),
    q('p95', quantile(0.95, OP, 'rpcscope_call_duration_seconds', CALLS, at)),
    q('p99', quantile(0.99, OP, 'rpcscope_call_duration_seconds', CALLS, at)),
    q('rate', sumRate(OP, 'rpcscope_calls_total', CALLS, at)),
    q('errors', ratio(OP, { metric: 'rpcscope_calls_total', matchers: [...CALLS, 'code!="OK"'] }, { metric: 'rpcscope_calls_total', matchers: CALLS }, at)),
    // A call that ends after its deadline is DEADLINE_EXCEEDED whatever else
    // happened (docs/metrics.md), so the code carries the miss with its operation.
    q(
      'deadline_miss',
      ratio(OP, { metric: 'rpcscope_calls_total', matchers: [...CALLS, 'code="DEADLINE_EXCEEDED"'] }, { metric: 'rpcscope_calls_total', matchers: CALLS }, at),
    ),
    q('resets', resetsByOperation(RESETS, CALLS, at)),
    q('req_bytes', perCall(OP, 'rpcscope_call_bytes_total', [...CALLS, 'flow="request"'], CALLS, at)),
    q('resp_bytes', perCall(OP, 'rpcscope_call_bytes_total', [...CALLS, 'flow="response"'], CALLS, at)),
  ];
}

export function protocolMigration(): Dashboard {
  return dashboard({
    uid: 'rpcscope-protocol-migration',
    title: 'rpcscope / Protocol migration',
    description: 'One operation over gRPC, gRPC-Web, Connect and REST side by side, and before against after a migration.',
    variables: [
      datasourceVariable(),
      clusterVariable(),
      namespaceVariable(),
      serviceVariable(),
      podVariable(),
      methodVariable(),
      operationVariable(),
      compareVariable(),
    ],
    items: [
      protocolCompare({
        title: 'Protocols compared',
        description: 'Latency, throughput, errors, deadline misses, resets and payload size per operation, each protocol against the REST baseline.',
        options: { mode: 'protocols', baseline: 'rest' },
        queries: compareQueries({}, ''),
      }),
      protocolCompare({
        title: 'Before and after',
        description: 'The same figures now and $compare earlier (pick the offset above so that "before" falls before the migration).',
        options: { mode: 'beforeAfter', baseline: 'rest' },
        queries: [...compareQueries({}, ''), ...compareQueries(BEFORE, '_before')],
      }),

      row('Per protocol'),
      timeseries({
        title: 'Calls/s by protocol',
        description: 'Traffic moving from one protocol to another shows here first.',
        unit: 'reqps',
        stack: true,
        queries: [{ expr: sumRate(['protocol'], 'rpcscope_calls_total', CALLS), legend: '{{protocol}}' }],
      }),
      timeseries({
        title: 'p99 latency by operation and protocol',
        description: 'Unary-shaped calls.',
        unit: 's',
        queries: [{ expr: quantile(0.99, OP, 'rpcscope_call_duration_seconds', CALLS), legend: '{{operation}} {{protocol}}' }],
      }),
      timeseries({
        title: 'Non-OK ratio by protocol',
        description: 'REST statuses are mapped to gRPC codes, so the ratios compare.',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: ratio(['protocol'], { metric: 'rpcscope_calls_total', matchers: [...CALLS, 'code!="OK"'] }, { metric: 'rpcscope_calls_total', matchers: CALLS }),
            legend: '{{protocol}}',
          },
        ],
      }),
      timeseries({
        title: 'Mean response size by protocol',
        description: 'Body bytes per call; protobuf against JSON shows here.',
        unit: 'bytes',
        queries: [{ expr: perCall(['protocol', 'encoding'], 'rpcscope_call_bytes_total', [...CALLS, 'flow="response"'], CALLS), legend: '{{protocol}} {{encoding}}' }],
      }),
      timeseries({
        title: 'Calls/s by encoding',
        description: 'proto, json, text (grpc-web-text) or other.',
        unit: 'reqps',
        stack: true,
        queries: [{ expr: sumRate(['protocol', 'encoding'], 'rpcscope_calls_total', CALLS), legend: '{{protocol}} {{encoding}}' }],
      }),
      timeseries({
        title: 'Calls/s now and before',
        description: 'All protocols together, now against $compare earlier.',
        unit: 'reqps',
        queries: [
          { expr: sumRate([], 'rpcscope_calls_total', CALLS), legend: 'now' },
          { expr: sumRate([], 'rpcscope_calls_total', CALLS, BEFORE), legend: 'before' },
        ],
      }),

      row('Transcoding and shadowing'),
      timeseries({
        title: 'Translated calls/s by operation',
        description: 'Calls the sidecar sent to the gRPC upstream after translating them: rest_to_grpc (--transcode, --split) or grpc_web_to_grpc (--grpc-web-bridge). Empty without those flags.',
        unit: 'reqps',
        stack: true,
        queries: [{ expr: sumRate(['operation', 'translation'], 'rpcscope_translated_calls_total', MIGRATED), legend: '{{operation}} {{translation}}' }],
      }),
      timeseries({
        title: 'Translation time p50 and p99',
        description: 'Time the sidecar spent translating one call\'s messages, the upstream\'s time excluded: the cost of transcoding against raw gRPC.',
        unit: 's',
        queries: [
          { expr: quantile(0.5, ['translation'], 'rpcscope_translation_seconds', SCOPE), legend: 'p50 {{translation}}' },
          { expr: quantile(0.99, ['translation'], 'rpcscope_translation_seconds', SCOPE), legend: 'p99 {{translation}}' },
        ],
      }),
      timeseries({
        title: 'Shadow match ratio by operation',
        description: 'Share of the calls mirrored to --shadow whose answer matched the primary\'s (status and body); below 1, the new backend answers differently. Empty without --shadow.',
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [
          {
            expr: ratio(['operation'], { metric: 'rpcscope_shadow_calls_total', matchers: [...MIGRATED, 'result="match"'] }, { metric: 'rpcscope_shadow_calls_total', matchers: MIGRATED }),
            legend: '{{operation}}',
          },
        ],
      }),
      timeseries({
        title: 'Shadow mismatches and errors/s',
        description: 'Mirrored calls whose answer differed (the sidecar\'s "shadow answer differs" log line names the first differing field) or that the shadow failed, by operation.',
        unit: 'reqps',
        min: 0,
        queries: [
          { expr: rateOrZero(['operation'], 'rpcscope_shadow_calls_total', [...MIGRATED, 'result="mismatch"'], MIGRATED), legend: 'mismatch {{operation}}' },
          { expr: rateOrZero(['operation'], 'rpcscope_shadow_calls_total', [...MIGRATED, 'result="error"'], MIGRATED), legend: 'error {{operation}}' },
        ],
      }),
    ],
  });
}
