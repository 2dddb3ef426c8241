// Writes the kube-prometheus-stack manifests of this directory from the files
// they repeat, so the rules and dashboards have one source each:
//   prometheusrule.yaml  <- deploy/prometheus/rules/rpcscope.rules.yml
//   dashboards.yaml      <- dashboards/*.json (one ConfigMap per dashboard)
//   node --import tsx deploy/kubernetes/kube-prometheus-stack/generate.ts
// A test fails when the committed files and this output differ. The YAML is
// written as text (the rules file indented under `spec:`, each dashboard as a
// literal block), which keeps the rules' comments and needs no YAML library.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DASHBOARDS_DIR, buildDashboards } from '../../../dashboards/generate.ts';

export const STACK_DIR = dirname(fileURLToPath(import.meta.url));
export const RULES_FILE = join(STACK_DIR, '..', '..', 'prometheus', 'rules', 'rpcscope.rules.yml');

/**
 * The label kube-prometheus-stack's default ruleSelector and
 * podMonitorSelector match: `release: <the Helm release name>`, here the name
 * its documentation installs under. Another name: a Kustomize patch
 * (deploy/README.md, "Install with kube-prometheus-stack").
 */
export const RELEASE = 'kube-prometheus-stack';

/** The label and value the Grafana dashboard sidecar looks for by default (sidecar.dashboards.label / labelValue). */
export const DASHBOARD_LABEL = ['grafana_dashboard', '1'] as const;

function indent(text: string, by: number): string {
  const pad = ' '.repeat(by);
  return text
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}

const HEADER = (source: string) =>
  [
    `# Generated from ${source} by`,
    '# deploy/kubernetes/kube-prometheus-stack/generate.ts: edit the source and',
    '# run the script; a test keeps the two equal.',
  ].join('\n');

export function prometheusRule(rules: string): string {
  if (/^---|\t/m.test(rules)) throw new Error('the rules file must be one YAML document without tabs');
  return [
    HEADER('deploy/prometheus/rules/rpcscope.rules.yml'),
    'apiVersion: monitoring.coreos.com/v1',
    'kind: PrometheusRule',
    'metadata:',
    '  name: rpcscope',
    '  labels:',
    '    app.kubernetes.io/name: rpcscope',
    '    # Matched by the stack\'s ruleSelector (release: <Helm release name>).',
    `    release: ${RELEASE}`,
    'spec:',
    indent(rules.trimEnd(), 2),
    '',
  ].join('\n');
}

export function dashboardConfigMaps(files: Record<string, string>): string {
  const docs = Object.entries(files).map(([file, json]) =>
    [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      `  name: rpcscope-dashboard-${file.replace(/\.json$/, '')}`,
      '  labels:',
      '    app.kubernetes.io/name: rpcscope',
      '    # What the Grafana sidecar of kube-prometheus-stack loads by default.',
      `    ${DASHBOARD_LABEL[0]}: "${DASHBOARD_LABEL[1]}"`,
      '  annotations:',
      '    # The folder, where the sidecar is told to read it',
      '    # (sidecar.dashboards.folderAnnotation: grafana_folder).',
      '    grafana_folder: rpcscope',
      'data:',
      `  ${file}: |`,
      indent(json.trimEnd(), 4),
    ].join('\n'),
  );
  return `${HEADER('dashboards/*.json')}\n${docs.join('\n---\n')}\n`;
}

/** File name (in this directory) -> content. */
export function buildStackManifests(): Record<string, string> {
  const dashboards = Object.fromEntries(Object.keys(buildDashboards()).map((f) => [f, readFileSync(join(DASHBOARDS_DIR, f), 'utf8')]));
  return {
    'prometheusrule.yaml': prometheusRule(readFileSync(RULES_FILE, 'utf8')),
    'dashboards.yaml': dashboardConfigMaps(dashboards),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const [file, text] of Object.entries(buildStackManifests())) {
    writeFileSync(join(STACK_DIR, file), text);
    console.log(`wrote deploy/kubernetes/kube-prometheus-stack/${file}`);
  }
}
