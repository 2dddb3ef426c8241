import { DataLink, FieldConfig, InterpolateFunction } from '@grafana/data';

export interface OperationLink {
  title: string;
  href: string;
  targetBlank: boolean;
}

/** The dashboard an operation's row links to by default (dashboards/rpc-overview.json). */
export const RPC_OVERVIEW_LINK: DataLink = {
  title: 'RPC overview for ${__field.labels.operation}',
  // The overview filters by method; an operation with no mapping is its method, and a mapped one
  // shares the RPC method's name, so this opens the operation's RPC traffic.
  url: '/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-method=${__field.labels.operation}&${__url_time_range}',
};

const FIELD_LABEL = /\$\{__field\.labels\.([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * The field config's data links for one operation's row. The panel fills in the row's labels
 * (`${__field.labels.operation}`, `${__field.labels.protocol}`), URL-encoded in the URL, and
 * hands the rest (dashboard variables, `${__url_time_range}`) to Grafana's interpolation.
 */
export function operationLinks(
  configs: Iterable<FieldConfig>,
  labels: Record<string, string>,
  replaceVariables: InterpolateFunction
): OperationLink[] {
  let links: DataLink[] | undefined;
  for (const config of configs) {
    if (config.links?.length) {
      links = config.links;
      break;
    }
  }
  return (links ?? []).map((link) => ({
    title: replaceVariables(link.title.replace(FIELD_LABEL, (_, name: string) => labels[name] ?? '')),
    href: replaceVariables(link.url.replace(FIELD_LABEL, (_, name: string) => encodeURIComponent(labels[name] ?? ''))),
    targetBlank: link.targetBlank ?? false,
  }));
}
