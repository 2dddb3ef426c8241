// HTTP/2 load balance: whether calls are spread over a service's pods, and
// the connections behind the spread. HTTP/2 multiplexes a client's calls over
// one long-lived connection and kube-proxy balances connections, so a few
// connections carrying most calls pin the load to a few pods.
import { dashboard, protocolCompare, row, stat, timeseries, type Dashboard } from './model.ts';
import { CLUSTER, INBOUND, SCOPE, mean, podCallRate, podShare, podSkew, podSkewOverall, quantile, sumGauge, sumRate, type Matchers } from './promql.ts';
import { clusterVariable, datasourceVariable, methodVariable, namespaceVariable, podVariable, serviceVariable } from './variables.ts';

/** Skew and share are judged over every pod of the service, whatever pods are picked. */
const SERVICE: Matchers = [...CLUSTER, 'namespace=~"$namespace"', 'service=~"$service"'];
const INBOUND_CALLS: Matchers = [...INBOUND, ...SCOPE, 'method=~"$method"'];
const DOWNSTREAM: Matchers = ['side="downstream"', ...SCOPE];

const METHOD_ONLY: Matchers = ['method=~"$method"'];

function share(): string {
  return podShare(SCOPE, SERVICE, METHOD_ONLY);
}

function callsPerConnection(): string {
  return `${sumRate(['pod'], 'rpcscope_calls_total', INBOUND_CALLS)}\n  /\n(${sumGauge(['pod'], 'rpcscope_connections_active', DOWNSTREAM)} > 0)`;
}

export function http2LoadBalance(): Dashboard {
  return dashboard({
    uid: 'rpcscope-http2-load-balance',
    title: 'rpcscope / HTTP/2 load balance',
    description: 'Per-pod share of calls, cross-pod skew, connections and calls per connection, GOAWAYs, and outbound per-endpoint balancing.',
    variables: [datasourceVariable(), clusterVariable(), namespaceVariable(), serviceVariable(), podVariable(), methodVariable()],
    items: [
      stat({
        title: 'Skew now',
        description: 'max / mean of the per-pod inbound call rate; 1 is perfect balance, N pods with all the load on one gives N. The RpcscopePodLoadSkew alert fires above 1.5 for 15 minutes.',
        unit: 'none',
        red: 1.5,
        queries: [{ expr: podSkew(SERVICE), legend: '{{namespace}}/{{service}}' }],
      }),
      stat({
        title: 'Pods serving calls',
        description: 'Pods whose sidecar has carried inbound calls in the window.',
        unit: 'none',
        queries: [{ expr: `count by (namespace, service) (\n  ${podCallRate(SERVICE)} > 0\n)`, legend: '{{namespace}}/{{service}}' }],
      }),
      stat({
        title: 'Open client connections',
        description: 'Downstream connections open now on the selected pods.',
        unit: 'none',
        queries: [{ expr: sumGauge([], 'rpcscope_connections_active', DOWNSTREAM), legend: 'connections' }],
      }),
      stat({
        title: 'GOAWAYs/s',
        description: 'GOAWAY frames received or sent; a burst usually means a rollout or connection max-age at work.',
        unit: 'short',
        queries: [{ expr: sumRate([], 'rpcscope_http2_goaways_total', SCOPE), legend: 'GOAWAY/s' }],
      }),

      row('Share per pod'),
      protocolCompare({
        title: 'Pods compared',
        description: 'The rpcscope panel in pods mode, one per service: each pod\'s share of calls (idle pods at 0), its connections and the calls each closed connection carried, and the skew.',
        options: { mode: 'pods', baseline: 'rest', podLabel: 'pod', skewThreshold: 1.5 },
        repeat: 'service',
        queries: [
          { refId: 'share', expr: share(), legend: '{{pod}}' },
          { refId: 'rate', expr: podCallRate(SCOPE, {}, METHOD_ONLY), legend: '{{pod}}' },
          { refId: 'connections', expr: sumGauge(['pod'], 'rpcscope_connections_active', DOWNSTREAM), legend: '{{pod}}' },
          { refId: 'calls_per_connection', expr: mean(['pod'], 'rpcscope_connection_calls', DOWNSTREAM), legend: '{{pod}}' },
          { refId: 'skew', expr: podSkewOverall(SERVICE), legend: 'skew' },
        ],
        h: 10,
      }),
      timeseries({
        title: 'Share of calls per pod',
        description: 'Each pod\'s fraction of its service\'s inbound calls, idle pods at 0; with N pods, balance is 1/N each. One panel per service.',
        unit: 'percentunit',
        stack: true,
        min: 0,
        repeat: 'service',
        queries: [{ expr: share(), legend: '{{pod}}' }],
      }),
      timeseries({
        title: 'Skew over time',
        description: 'max / mean of the per-pod call rate, per service.',
        unit: 'none',
        min: 1,
        queries: [{ expr: podSkew(SERVICE), legend: '{{namespace}}/{{service}}' }],
      }),
      timeseries({
        title: 'Call rate per pod',
        description: 'Inbound calls per second on each pod, idle pods at 0.',
        unit: 'reqps',
        queries: [{ expr: podCallRate(SCOPE, {}, METHOD_ONLY), legend: '{{namespace}}/{{service}} {{pod}}' }],
      }),
      timeseries({
        title: 'In flight per pod',
        description: 'Inbound calls and streams open on each pod now.',
        unit: 'short',
        queries: [{ expr: sumGauge(['pod'], 'rpcscope_calls_active', [...INBOUND, ...SCOPE, 'method=~"$method"']), legend: '{{pod}}' }],
      }),

      row('Connections'),
      timeseries({
        title: 'Client connections per pod',
        description: 'Open downstream connections by HTTP version. A pod with one HTTP/2 connection and most of the calls is the sticky-connection signature.',
        unit: 'short',
        queries: [{ expr: sumGauge(['pod', 'http_version'], 'rpcscope_connections_active', DOWNSTREAM), legend: '{{pod}} HTTP/{{http_version}}' }],
      }),
      timeseries({
        title: 'Calls/s per open connection',
        description: 'Inbound call rate over open client connections, per pod.',
        unit: 'reqps',
        queries: [{ expr: callsPerConnection(), legend: '{{pod}}' }],
      }),
      timeseries({
        title: 'Calls carried per closed connection',
        description: 'p50 and p99 of the calls each closed client connection carried.',
        unit: 'short',
        queries: [
          { expr: quantile(0.5, ['pod'], 'rpcscope_connection_calls', DOWNSTREAM), legend: 'p50 {{pod}}' },
          { expr: quantile(0.99, ['pod'], 'rpcscope_connection_calls', DOWNSTREAM), legend: 'p99 {{pod}}' },
        ],
      }),
      timeseries({
        title: 'Connection lifetime p50',
        description: 'How long closed client connections lived; --max-connection-age bounds it.',
        unit: 's',
        queries: [{ expr: quantile(0.5, ['pod'], 'rpcscope_connection_duration_seconds', DOWNSTREAM), legend: '{{pod}}' }],
      }),
      timeseries({
        title: 'GOAWAYs/s',
        description: 'By pod, sender and error code.',
        unit: 'short',
        queries: [{ expr: sumRate(['pod', 'side', 'error_code'], 'rpcscope_http2_goaways_total', SCOPE), legend: '{{pod}} {{side}} {{error_code}}' }],
      }),

      row('Outbound balancing (client sidecars)'),
      timeseries({
        title: 'Calls/s per upstream endpoint',
        description: 'How an outbound sidecar spreads its pod\'s calls over the endpoints of the headless Service.',
        unit: 'reqps',
        queries: [{ expr: sumRate(['pod', 'upstream'], 'rpcscope_upstream_calls_total', SCOPE), legend: '{{pod}} -> {{upstream}}' }],
      }),
      timeseries({
        title: 'Per-endpoint skew (sidecar estimate)',
        description: 'Each outbound sidecar\'s own max / mean over the endpoints it knows, over 30 s.',
        unit: 'none',
        queries: [{ expr: sumGauge(['pod'], 'rpcscope_load_skew_ratio', SCOPE), legend: '{{pod}}' }],
      }),
      timeseries({
        title: 'Upstream endpoints known',
        description: 'Endpoints each outbound sidecar resolved from the headless Service.',
        unit: 'short',
        queries: [{ expr: sumGauge(['pod'], 'rpcscope_upstream_endpoints', SCOPE), legend: '{{pod}}' }],
      }),
      timeseries({
        title: 'Connections per upstream endpoint',
        description: 'Open connections from outbound sidecars to each endpoint.',
        unit: 'short',
        queries: [{ expr: sumGauge(['upstream'], 'rpcscope_upstream_connections_active', SCOPE), legend: '{{upstream}}' }],
      }),
      timeseries({
        title: 'In flight per upstream endpoint',
        description: 'What least_request balancing compares.',
        unit: 'short',
        queries: [{ expr: sumGauge(['upstream'], 'rpcscope_upstream_calls_active', SCOPE), legend: '{{upstream}}' }],
      }),
      timeseries({
        title: 'Latency per upstream endpoint p99',
        description: 'What ewma balancing weighs.',
        unit: 's',
        queries: [{ expr: quantile(0.99, ['upstream'], 'rpcscope_upstream_call_duration_seconds', SCOPE), legend: '{{upstream}}' }],
      }),
    ],
  });
}
