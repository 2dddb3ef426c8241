// The kube-prometheus-stack install (deploy/kubernetes/kube-prometheus-stack
// and components/kube-prometheus-stack): generated from the rules file and the
// dashboards, labelled the way the stack's selectors and Grafana's dashboard
// sidecar expect, and built by Debian's `kubectl kustomize`.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigMap } from 'kubernetes-models/v1';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse, stringify } from 'yaml';
import { DASHBOARDS_DIR } from '../../dashboards/generate.ts';
import { RELEASE, STACK_DIR, buildStackManifests } from '../../deploy/kubernetes/kube-prometheus-stack/generate.ts';
import { canonical, kubectlKustomize, kustomize, type Resource } from './kustomize.ts';
import { REPO_ROOT } from './metrics-contract.ts';
import { promtool } from './promql.ts';

const K8S = join(REPO_ROOT, 'deploy', 'kubernetes');
const RULES_DIR = join(REPO_ROOT, 'deploy', 'prometheus', 'rules');
// kubectl apply (client-side) keeps the whole object in an annotation, which
// the API server caps at 256 KiB.
const LAST_APPLIED_LIMIT = 262_144;

type ConfigMapJson = Resource & { data: Record<string, string>; metadata: Resource['metadata'] & { annotations?: Record<string, string> } };
type RuleGroups = { groups: { name: string; rules: Record<string, unknown>[] }[] };


function theOnly<T extends Resource>(resources: Resource[], kind: string): T {
  const found = resources.filter((r) => r.kind === kind);
  assert.equal(found.length, 1, `${found.length} ${kind}`);
  return found[0] as T;
}

describe('kube-prometheus-stack install', () => {
  const stack = kubectlKustomize(join(K8S, 'kube-prometheus-stack'));

  it('its manifests are the generator\'s output (run `node --import tsx deploy/kubernetes/kube-prometheus-stack/generate.ts`)', () => {
    for (const [file, text] of Object.entries(buildStackManifests())) {
      assert.equal(readFileSync(join(STACK_DIR, file), 'utf8'), text, `deploy/kubernetes/kube-prometheus-stack/${file} is stale`);
    }
  });

  it('kubectl kustomize and the test\'s builder agree on the stack pieces and the example overlay', () => {
    assert.equal(canonical(kustomize(join(K8S, 'kube-prometheus-stack'))), canonical(stack));
    const example = join(K8S, 'examples', 'orders-kube-prometheus-stack');
    assert.equal(canonical(kustomize(example)), canonical(kubectlKustomize(example)));
  });

  it('the PrometheusRule holds every group of deploy/prometheus/rules, valid for the operator\'s schema and for promtool, selected by the release label', () => {
    const rule = theOnly<Resource & { spec: RuleGroups }>(stack, 'PrometheusRule');
    assert.doesNotThrow(() => new PrometheusRule(rule as never).validate());
    const files = readdirSync(RULES_DIR).filter((f) => f.endsWith('.yml'));
    const groups = files.flatMap((f) => (parse(readFileSync(join(RULES_DIR, f), 'utf8')) as RuleGroups).groups);
    assert.ok(groups.length >= 2);
    assert.deepEqual(rule.spec.groups, groups);
    assert.equal(rule.metadata.labels?.release, RELEASE);
    assert.equal(rule.metadata.namespace, 'monitoring');
    // What the operator hands Prometheus is the spec as a rule file.
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-prometheusrule-'));
    try {
      writeFileSync(join(dir, 'rules.yml'), stringify(rule.spec));
      const r = promtool(['check', 'rules', join(dir, 'rules.yml')]);
      assert.ok(r.ok, r.output);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('each dashboard is a ConfigMap labelled grafana_dashboard: "1" holding the committed JSON, small enough for kubectl apply', () => {
    const maps = stack.filter((r) => r.kind === 'ConfigMap') as ConfigMapJson[];
    const files = readdirSync(DASHBOARDS_DIR).filter((f) => f.endsWith('.json')).sort();
    assert.deepEqual(maps.flatMap((m) => Object.keys(m.data)).sort(), files);
    for (const m of maps) {
      assert.doesNotThrow(() => new ConfigMap(m as never).validate(), m.metadata.name);
      assert.equal(m.metadata.labels?.grafana_dashboard, '1');
      assert.equal(m.metadata.annotations?.grafana_folder, 'rpcscope');
      const [[file, json] = []] = Object.entries(m.data);
      assert.ok(file && json !== undefined);
      assert.equal(json, readFileSync(join(DASHBOARDS_DIR, file), 'utf8'), file);
      assert.equal((JSON.parse(json) as { uid: string }).uid.startsWith('rpcscope-'), true);
      assert.ok(Buffer.byteLength(JSON.stringify(m)) < LAST_APPLIED_LIMIT, `${m.metadata.name} is too large for client-side apply`);
    }
  });

  it('the component gives the PodMonitor the release label, and an overlay patch can change it', () => {
    const example = kubectlKustomize(join(K8S, 'examples', 'orders-kube-prometheus-stack'));
    const pm = theOnly<Resource>(example, 'PodMonitor');
    assert.doesNotThrow(() => new PodMonitor(pm as never).validate());
    assert.equal(pm.metadata.labels?.release, RELEASE);
    // The selector itself is untouched: the component only labels the PodMonitor.
    const plain = theOnly<Resource>(kubectlKustomize(join(K8S, 'examples', 'orders')), 'PodMonitor');
    assert.deepEqual({ ...pm, metadata: { ...pm.metadata, labels: plain.metadata.labels } }, plain);

    // The override deploy/README.md shows, for a release named "prometheus".
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-release-'));
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        stringify({
          apiVersion: 'kustomize.config.k8s.io/v1beta1',
          kind: 'Kustomization',
          resources: [relative(dir, join(K8S, 'examples', 'orders'))],
          components: [relative(dir, join(K8S, 'components', 'kube-prometheus-stack'))],
          patches: [{ target: { kind: 'PodMonitor', name: 'rpcscope' }, patch: 'apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata:\n  name: rpcscope\n  labels:\n    release: prometheus\n' }],
        }),
      );
      const overridden = kubectlKustomize(dir);
      assert.equal(theOnly<Resource>(overridden, 'PodMonitor').metadata.labels?.release, 'prometheus');
      assert.equal(canonical(kustomize(dir)), canonical(overridden));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
