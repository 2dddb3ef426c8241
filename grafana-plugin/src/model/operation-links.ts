import { DataLink, FieldConfig, InterpolateFunction } from '@grafana/data';

export interface OperationLink {
  title: string;
  href: string;
  targetBlank: boolean;
}

/**
 * The dashboard an operation's row links to by default (dashboards/rpc-overview.json), filtered
 * to that operation by its `operation` variable. The cluster and service chosen here go along as
 * `${name:queryparam}` (`var-cluster=a&var-cluster=b`), the form Grafana's own data-link editor
 * inserts for a dashboard variable. Not `${__all_variables}`: a dashboard with its own `operation`,
 * `method` or `pod` variables (protocol-migration.json) would carry those along too, and the
 * overview would then show the dashboard's selection rather than the row's operation.
 */
export const RPC_OVERVIEW_LINK: DataLink = {
  title: 'RPC overview for ${__field.labels.operation}',
  url: '/d/rpcscope-rpc-overview/rpcscope-rpc-overview?var-operation=${__field.labels.operation}&${cluster:queryparam}&${service:queryparam}&${__url_time_range}',
};

const FIELD_LABEL = /\$\{__field\.labels\.([A-Za-z_][A-Za-z0-9_]*)\}/g;
/** What Grafana's interpolation leaves of a variable the dashboard does not have. */
const UNRESOLVED = /\$\{[^}]*\}/;

/**
 * Drops the query parameters Grafana could not fill in (a variable this dashboard lacks), so that
 * a link meant for dashboards with a `cluster` variable still works on one without.
 */
function withoutUnresolved(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) {
    return url;
  }
  const kept = url
    .slice(q + 1)
    .split('&')
    .filter((part) => part !== '' && !UNRESOLVED.test(part));
  return kept.length > 0 ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q);
}

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
    href: withoutUnresolved(
      replaceVariables(link.url.replace(FIELD_LABEL, (_, name: string) => encodeURIComponent(labels[name] ?? '')))
    ),
    targetBlank: link.targetBlank ?? false,
  }));
}
