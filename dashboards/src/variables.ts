// Template variables shared by the rpcscope dashboards. Each query variable
// narrows the next (cluster -> namespace -> service -> pod -> method), all read
// from rpcscope_calls_total, the one series every sidecar that has carried a
// call exports. `cluster`, `service`, `namespace` and `pod` are target labels
// attached at scrape time (deploy/README.md, "Labels").
import { DATASOURCE, type Variable } from './model.ts';

export function datasourceVariable(): Variable {
  return {
    name: 'datasource',
    label: 'Data source',
    type: 'datasource',
    query: 'prometheus',
    refresh: 1,
    regex: '',
    hide: 0,
    includeAll: false,
    multi: false,
    options: [],
    skipUrlSync: false,
  };
}

function labelValues(name: string, label: string, selector: string, help: string, allValue: string | null = '.*'): Variable {
  const definition = `label_values(${selector}, ${name})`;
  return {
    name,
    label,
    description: help,
    type: 'query',
    datasource: DATASOURCE,
    query: { qryType: 1, query: definition, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    refresh: 2,
    regex: '',
    sort: 1,
    hide: 0,
    includeAll: true,
    multi: true,
    // A regex that matches every value, so `=~"$var"` keeps series whose
    // label is empty or absent (`cluster` with one cluster). Without one,
    // Grafana's All is the list of the options the query found.
    ...(allValue === null ? {} : { allValue }),
    current: { selected: true, text: ['All'], value: ['$__all'] },
    options: [],
    skipUrlSync: false,
  };
}

/**
 * With a single cluster the label is absent: the query finds no value, Grafana
 * then selects All, and `cluster=~".*"` matches series without the label.
 */
export function clusterVariable(): Variable {
  return labelValues('cluster', 'Cluster', 'rpcscope_calls_total', 'The cluster the Prometheus scraping the pods names (external label or relabelling); empty with one cluster');
}

export function namespaceVariable(): Variable {
  return labelValues('namespace', 'Namespace', 'rpcscope_calls_total{cluster=~"$cluster"}', 'Kubernetes namespace of the pods');
}

export function serviceVariable(): Variable {
  return labelValues('service', 'Service', 'rpcscope_calls_total{cluster=~"$cluster", namespace=~"$namespace"}', 'The workload (app.kubernetes.io/name of its pods)');
}

export function podVariable(): Variable {
  return labelValues('pod', 'Pod', 'rpcscope_calls_total{cluster=~"$cluster", namespace=~"$namespace", service=~"$service"}', 'One pod, with its sidecar');
}

const METHOD_HELP = 'gRPC method (pkg.Service/Method) or REST route (GET /v1/orders/{id})';

export function methodVariable(): Variable {
  return labelValues('method', 'Method', 'rpcscope_calls_total{cluster=~"$cluster", namespace=~"$namespace", service=~"$service", pod=~"$pod"}', METHOD_HELP);
}

/**
 * The method variable narrowed by `operation`, for a dashboard whose series
 * without an `operation` label (streams, resets, deadlines) are filtered by
 * method: its All is the list of the chosen operations' methods, not `.*`.
 */
export function methodOfOperationVariable(): Variable {
  return labelValues(
    'method',
    'Method',
    'rpcscope_calls_total{cluster=~"$cluster", namespace=~"$namespace", service=~"$service", pod=~"$pod", operation=~"$operation"}',
    `${METHOD_HELP}; All is every method of the operations picked`,
    null,
  );
}

export function operationVariable(): Variable {
  return labelValues(
    'operation',
    'Operation',
    'rpcscope_calls_total{cluster=~"$cluster", namespace=~"$namespace", service=~"$service", pod=~"$pod"}',
    'The logical operation a REST route and an RPC method share',
  );
}

function custom(name: string, label: string, description: string, values: string[], initial: string, all: boolean): Variable {
  return {
    name,
    label,
    description,
    type: 'custom',
    query: values.join(','),
    current: { selected: true, text: initial, value: initial },
    options: values.map((v) => ({ selected: v === initial, text: v, value: v })),
    hide: 0,
    includeAll: all,
    multi: false,
    ...(all ? { allValue: '.*' } : {}),
    skipUrlSync: false,
  };
}

export function directionVariable(): Variable {
  return custom(
    'direction',
    'Direction',
    'inbound: calls into the pod, seen by its own sidecar; outbound: the pod\'s own calls, seen by an outbound sidecar',
    ['inbound', 'outbound'],
    'inbound',
    true,
  );
}

/** How far back the "before" side of a before/after comparison lies. */
export function compareVariable(): Variable {
  return custom('compare', 'Before = now minus', 'Offset of the "before" series in the before/after comparison', ['1h', '1d', '7d', '14d', '28d'], '7d', false);
}
