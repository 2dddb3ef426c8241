// The sidecar components applied to the app's own workloads: every kind with
// a pod template (Deployment, StatefulSet, DaemonSet) gets the sidecar, and
// what the app already had — its prometheus.io/* annotations, its own init
// containers, volumes and labels — comes out unchanged. Built by Debian's
// `kubectl kustomize` and by the test's builder, which must agree.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { DaemonSet, Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { stringify } from 'yaml';
import { canonical, kubectlKustomize, kustomize, type Resource } from './kustomize.ts';
import { REPO_ROOT } from './metrics-contract.ts';

const COMPONENTS = join(REPO_ROOT, 'deploy', 'kubernetes', 'components');

type Workload = Resource & {
  spec: {
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: { containers: { name: string }[]; initContainers?: { name: string; restartPolicy?: string }[]; volumes?: { name: string }[] };
    };
  };
};

// The app's metrics on its own port and path, for an annotation-driven job.
const APP_ANNOTATIONS = { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9100', 'prometheus.io/path': '/app/metrics', 'team.example/owner': 'ledger' };

function workload(kind: 'Deployment' | 'StatefulSet' | 'DaemonSet', name: string, inject: string): Workload {
  const spec: Record<string, unknown> = {
    selector: { matchLabels: { 'app.kubernetes.io/name': name } },
    template: {
      metadata: { labels: { 'app.kubernetes.io/name': name }, annotations: APP_ANNOTATIONS },
      spec: {
        initContainers: [{ name: 'migrate', image: 'example/migrate:1.0.0' }],
        containers: [{ name: 'app', image: 'example/app:1.0.0', ports: [{ name: 'app', containerPort: 8080 }] }],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    },
  };
  if (kind === 'StatefulSet') spec.serviceName = name;
  return { apiVersion: 'apps/v1', kind, metadata: { name, labels: { 'rpcscope.dev/inject': inject } }, spec } as unknown as Workload;
}

const MODELS = { Deployment, StatefulSet, DaemonSet } as Record<string, new (data: never) => { validate(): void }>;

function build(component: string, workloads: Workload[]): Resource[] {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-inject-'));
  try {
    writeFileSync(join(dir, 'workloads.yaml'), workloads.map((w) => stringify(w)).join('---\n'));
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      stringify({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: ['workloads.yaml'], components: [relative(dir, join(COMPONENTS, component))] }),
    );
    const theirs = kubectlKustomize(dir);
    assert.equal(canonical(kustomize(dir)), canonical(theirs), `${component}: the test's builder and kubectl disagree`);
    return theirs;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('sidecar injection', () => {
  for (const [component, inject, native] of [
    ['inbound-sidecar', 'inbound', true],
    ['inbound-sidecar-legacy', 'inbound', false],
    ['outbound-sidecar', 'outbound', true],
  ] as const) {
    it(`${component}: a Deployment, a StatefulSet and a DaemonSet each get the sidecar and keep their own annotations, init containers and volumes`, () => {
      const before = [workload('Deployment', 'orders', inject), workload('StatefulSet', 'ledger', inject), workload('DaemonSet', 'node-agent', inject), workload('Deployment', 'untouched', 'none')];
      const after = build(component, before) as Workload[];
      const ids = (ws: Workload[]) => ws.map((w) => `${w.kind}/${w.metadata.name}`).sort();
      assert.deepEqual(ids(after), ids(before));
      for (const w of after) {
        const t = w.spec.template;
        const sidecars = [...(t.spec.initContainers ?? []), ...t.spec.containers].filter((c) => c.name === 'rpcscope');
        if (w.metadata.name === 'untouched') {
          assert.deepEqual(w, before[3], 'a workload without the inject label is left alone');
          continue;
        }
        const where = `${w.kind}/${w.metadata.name}`;
        assert.doesNotThrow(() => new (MODELS[w.kind] as new (d: never) => { validate(): void })(w as never).validate(), where);
        assert.equal(sidecars.length, 1, `${where}: no sidecar`);
        assert.equal(t.spec.initContainers?.some((c) => c.name === 'rpcscope' && c.restartPolicy === 'Always') ?? false, native, `${where}: native`);
        assert.deepEqual(t.metadata.annotations, APP_ANNOTATIONS, `${where}: the app's annotations were changed`);
        assert.equal(t.metadata.labels['rpcscope.dev/sidecar'], inject);
        assert.equal(t.metadata.labels['app.kubernetes.io/name'], w.metadata.name);
        // kubectl's strategic merge puts the patch's init container first: a
        // native sidecar is then already running (and, by its startupProbe,
        // listening) for the app's own init containers too.
        assert.deepEqual(t.spec.initContainers?.map((c) => c.name), native ? ['rpcscope', 'migrate'] : ['migrate'], `${where}: init containers`);
        assert.ok(t.spec.containers.some((c) => c.name === 'app'));
        assert.deepEqual(t.spec.volumes?.map((v) => v.name).sort(), ['data', 'rpcscope-config']);
      }
    });
  }
});
