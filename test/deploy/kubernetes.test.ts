// The Kubernetes manifests in deploy/kubernetes: every example overlay builds,
// every resource validates against the Kubernetes (and Prometheus Operator)
// schemas, and the pieces agree with each other — ports, labels, probes,
// selectors — the way a cluster would need them to.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { parse, stringify } from 'yaml';
import { typeErrors, type TypedValue } from './json-types.ts';
import { canonical, kubectlKustomize, kustomize, type Resource } from './kustomize.ts';
import { REPO_ROOT } from './metrics-contract.ts';
import { promtool } from './promql.ts';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { startSidecarProcess } from '../support/sidecar-process.ts';

const K8S = join(REPO_ROOT, 'deploy', 'kubernetes');
const EXAMPLES = ['examples/orders', 'examples/orders-legacy', 'examples/client', 'examples/orders-kube-prometheus-stack'];
const built = new Map(EXAMPLES.map((e) => [e, kustomize(join(K8S, e))]));

type Probe = { httpGet?: { path: string; port: string | number } };
type Container = {
  name: string;
  image: string;
  restartPolicy?: string;
  env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: Probe;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds?: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string }[];
};
type PodSpec = { containers: Container[]; initContainers?: Container[]; volumes?: { name: string; configMap?: { name: string } }[] };
type DeploymentJson = Resource & {
  spec: { selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: PodSpec } };
};
type PodMonitorJson = Resource & {
  spec: {
    selector: { matchExpressions: { key: string; values: string[] }[] };
    podMetricsEndpoints: { port: string; path: string; relabelings: { sourceLabels?: string[]; targetLabel: string; regex?: string; replacement?: string }[] }[];
  };
};
type Selector = { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] };
type PolicyPort = { port?: number | string; endPort?: number; protocol?: string };
type IngressRule = { from?: { namespaceSelector?: Selector; podSelector?: Selector }[]; ports?: PolicyPort[] };
type NetworkPolicyJson = Resource & { spec: { podSelector: Selector; policyTypes: string[]; ingress: IngressRule[] } };
type ServiceJson = Resource & { spec: { clusterIP?: string; selector: Record<string, string>; ports: { port: number; targetPort: number | string }[] } };

function byKind<T extends Resource>(resources: Resource[], kind: string): T[] {
  return resources.filter((r) => r.kind === kind) as T[];
}

function sidecarOf(d: DeploymentJson): { container: Container; native: boolean } {
  const init = d.spec.template.spec.initContainers?.find((c) => c.name === 'rpcscope');
  if (init) return { container: init, native: true };
  const plain = d.spec.template.spec.containers.find((c) => c.name === 'rpcscope');
  assert.ok(plain, `${d.metadata.name} has no rpcscope sidecar`);
  return { container: plain, native: false };
}

function port(c: Container, name: string): number {
  const p = c.ports?.find((p) => p.name === name);
  assert.ok(p, `${c.name} has no port ${name}`);
  return p.containerPort;
}

function sidecarConfig(resources: Resource[]): Record<string, string> {
  const cm = byKind<Resource & { data: Record<string, string> }>(resources, 'ConfigMap').find((c) => c.metadata.name === 'rpcscope-config');
  assert.ok(cm, 'no rpcscope-config ConfigMap');
  return parse(cm.data['rpcscope.yaml'] ?? '') as Record<string, string>;
}

/** Whether a label selector (matchLabels, and In / Exists expressions) picks these labels. */
function selects(selector: Selector, labels: Record<string, string>): boolean {
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpression = (selector.matchExpressions ?? []).every((e) => {
    if (e.operator === 'In') return e.values?.includes(labels[e.key] ?? '') ?? false;
    if (e.operator === 'Exists') return e.key in labels;
    throw new Error(`selector operator ${e.operator} is not read here`);
  });
  return byLabel && byExpression;
}

/** Whether an ingress rule's ports admit this port (a rule without ports admits all of them). */
function admits(rule: IngressRule, port: number, protocol = 'TCP'): boolean {
  if (!rule.ports || rule.ports.length === 0) return true;
  return rule.ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    assert.equal(typeof p.port, 'number', `port ${String(p.port)}: a named port is not read here`);
    return port >= Number(p.port) && port <= (p.endPort ?? Number(p.port));
  });
}

function envValue(c: Container, name: string): string | undefined {
  return c.env?.find((e) => e.name === name)?.value;
}

function hostPortOf(addr: string): number {
  return Number(addr.split(':').pop());
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'v1/ConfigMap': ConfigMap as never,
  'v1/Service': Service as never,
  'apps/v1/Deployment': Deployment as never,
  'monitoring.coreos.com/v1/PodMonitor': PodMonitor as never,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy as never,
};
const TYPES: Record<string, string> = {
  'v1/ConfigMap': 'IConfigMap',
  'v1/Service': 'IService',
  'apps/v1/Deployment': 'IDeployment',
  'monitoring.coreos.com/v1/PodMonitor': 'IPodMonitor',
  'networking.k8s.io/v1/NetworkPolicy': 'INetworkPolicy',
};

describe('kubernetes manifests', () => {
  it('build the same with the test\'s Kustomize subset as with kubectl kustomize', () => {
    // kubectl is one of the programs `npm test` checks for (scripts/preflight.mjs): a
    // machine without it fails here rather than passing with nothing compared.
    let compared = 0;
    for (const e of [...EXAMPLES, 'base']) {
      const theirs = kubectlKustomize(join(K8S, e));
      assert.ok(theirs, 'kubectl is not installed (Debian package kubectl; scripts/preflight.mjs installs it)');
      assert.equal(canonical(kustomize(join(K8S, e))), canonical(theirs), e);
      compared++;
    }
    assert.equal(compared, EXAMPLES.length + 1);
  });

  it('validate against the Kubernetes and Prometheus Operator schemas (kubernetes-models), unknown fields included', () => {
    const typed: TypedValue[] = [];
    for (const [example, resources] of built) {
      assert.ok(resources.length >= 3, `${example} built ${resources.length} resources`);
      for (const r of resources) {
        const key = `${r.apiVersion}/${r.kind}`;
        const Model = MODELS[key];
        assert.ok(Model, `${example}: no schema for ${key}`);
        assert.doesNotThrow(() => new Model(r as never).validate(), `${example}: ${key} ${r.metadata.name}`);
        typed.push({ label: `${example}: ${r.kind} ${r.metadata.name}`, type: TYPES[key] ?? 'never', value: r });
      }
    }
    const errors = typeErrors(
      [
        "import type { IConfigMap, IService } from 'kubernetes-models/v1';",
        "import type { IDeployment } from 'kubernetes-models/apps/v1';",
        "import type { IPodMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';",
        "import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';",
      ].join('\n'),
      typed,
    );
    assert.deepEqual(errors, []);
  });

  it('the schema checks reject a bad field value and a misspelt field', () => {
    const d = byKind<DeploymentJson>(built.get('examples/orders') ?? [], 'Deployment')[0];
    assert.ok(d);
    const bad = structuredClone(d);
    const sidecar = sidecarOf(bad).container;
    sidecar.ports = [{ name: 'rpcscope-admin', containerPort: 'x' as unknown as number }];
    assert.throws(() => new Deployment(bad as never).validate(), /containerPort/);
    const misspelt = structuredClone(d);
    (sidecarOf(misspelt).container as Record<string, unknown>).restartpolicy = 'Always';
    const errors = typeErrors("import type { IDeployment } from 'kubernetes-models/apps/v1';", [{ label: 'd', type: 'IDeployment', value: misspelt }]);
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /restartpolicy/);
  });

  it('run the sidecar natively (init container, restartPolicy Always) or, for older clusters, as a plain container that is otherwise the same', () => {
    const [native] = byKind<DeploymentJson>(built.get('examples/orders') ?? [], 'Deployment');
    const [legacy] = byKind<DeploymentJson>(built.get('examples/orders-legacy') ?? [], 'Deployment');
    assert.ok(native && legacy);
    const n = sidecarOf(native);
    const l = sidecarOf(legacy);
    assert.ok(n.native && n.container.restartPolicy === 'Always');
    assert.ok(!l.native && l.container.restartPolicy === undefined);
    // The startupProbe is what orders a native sidecar before the app; a plain container has no such order to keep.
    const { restartPolicy: _ignored, startupProbe: _ordering, ...nativeRest } = n.container;
    assert.deepEqual(l.container, nativeRest);
    assert.equal(legacy.spec.template.spec.containers.length, 2);
    assert.deepEqual(native.spec.template.spec.containers.map((c) => c.name), ['orders']);
  });

  for (const example of EXAMPLES) {
    it(`${example}: sidecar has the downward API, probes on the admin port, sized resources and a locked-down container`, () => {
      const resources = built.get(example) ?? [];
      const config = sidecarConfig(resources);
      for (const d of byKind<DeploymentJson>(resources, 'Deployment')) {
        const { container: c } = sidecarOf(d);
        assert.match(c.image, /^rpcscope\/sidecar:\d+\.\d+\.\d+$/);
        assert.equal(c.env?.find((e) => e.name === 'POD_NAME')?.valueFrom?.fieldRef?.fieldPath, 'metadata.name');
        assert.equal(c.env?.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
        const admin = port(c, 'rpcscope-admin');
        assert.equal(admin, hostPortOf(envValue(c, 'RPCSCOPE_ADMIN') ?? config.admin ?? ''), 'admin port agrees with the config file');
        assert.deepEqual(c.readinessProbe?.httpGet, { path: '/readyz', port: 'rpcscope-admin' });
        assert.deepEqual(c.livenessProbe?.httpGet, { path: '/healthz', port: 'rpcscope-admin' });
        assert.deepEqual(c.resources, { requests: { cpu: '100m', memory: '96Mi' }, limits: { memory: '256Mi' } });
        assert.equal(c.securityContext?.runAsNonRoot, true);
        assert.equal(c.securityContext?.readOnlyRootFilesystem, true);
        // Both scrape paths find the sidecar by label and port name; prometheus.io/* stays the app's.
        assert.deepEqual(Object.keys(d.spec.template.metadata.annotations ?? {}).filter((a) => a.startsWith('prometheus.io/')), []);
        const configVolume = d.spec.template.spec.volumes?.find((v) => v.name === 'rpcscope-config');
        assert.equal(configVolume?.configMap?.name, 'rpcscope-config');
        assert.ok(c.volumeMounts?.some((m) => m.name === 'rpcscope-config' && m.mountPath === '/etc/rpcscope'));
        // The built sidecar writes nothing at run time: no writable /tmp beside the read-only root.
        assert.deepEqual(c.volumeMounts?.map((m) => m.mountPath), ['/etc/rpcscope']);
        assert.deepEqual(d.spec.selector.matchLabels, { 'app.kubernetes.io/name': d.spec.template.metadata.labels['app.kubernetes.io/name'] });
        for (const other of d.spec.template.spec.containers) assert.doesNotMatch(other.image, /:latest$|^[^:]+$/, `${other.name} image is pinned`);
      }
    });

    it(`${example}: the PodMonitor selects the sidecar pods and scrapes a port they declare`, () => {
      const resources = built.get(example) ?? [];
      const [pm] = byKind<PodMonitorJson>(resources, 'PodMonitor');
      assert.ok(pm);
      const expr = pm.spec.selector.matchExpressions[0];
      assert.ok(expr);
      for (const d of byKind<DeploymentJson>(resources, 'Deployment')) {
        assert.ok(expr.values.includes(d.spec.template.metadata.labels[expr.key] ?? ''), `${d.metadata.name} pods are not selected`);
        const endpoint: PodMonitorJson['spec']['podMetricsEndpoints'][number] | undefined = pm.spec.podMetricsEndpoints[0];
        assert.ok(endpoint);
        port(sidecarOf(d).container, endpoint.port);
        assert.equal(endpoint.path, '/metrics');
        assert.ok(endpoint.relabelings.some((r) => r.targetLabel === 'service' && r.sourceLabels?.[0] === '__meta_kubernetes_pod_label_app_kubernetes_io_name'));
      }
    });
  }

  // Pod Security Standards, "restricted" profile
  // (https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted):
  // per container, unless set for the whole pod where the rule allows it.
  for (const example of EXAMPLES) {
    it(`${example}: every container passes the Pod Security restricted profile`, () => {
      for (const d of byKind<DeploymentJson>(built.get(example) ?? [], 'Deployment')) {
        const pod = d.spec.template.spec as PodSpec & { securityContext?: Record<string, unknown> };
        const podSc = pod.securityContext ?? {};
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          const sc = c.securityContext ?? {};
          const where = `${d.metadata.name}/${c.name}`;
          assert.equal(sc.allowPrivilegeEscalation, false, `${where}: allowPrivilegeEscalation`);
          assert.ok(sc.runAsNonRoot === true || (sc.runAsNonRoot === undefined && podSc.runAsNonRoot === true), `${where}: runAsNonRoot`);
          assert.notEqual(sc.runAsUser ?? podSc.runAsUser, 0, `${where}: runAsUser 0`);
          const seccomp = ((sc.seccompProfile ?? podSc.seccompProfile) as { type?: string } | undefined)?.type;
          assert.ok(seccomp === 'RuntimeDefault' || seccomp === 'Localhost', `${where}: seccompProfile ${seccomp}`);
          const caps = sc.capabilities as { drop?: string[]; add?: string[] } | undefined;
          assert.ok(caps?.drop?.includes('ALL'), `${where}: capabilities drop ALL`);
          assert.ok((caps?.add ?? []).every((a) => a === 'NET_BIND_SERVICE'), `${where}: capabilities add`);
        }
      }
    });
  }

  it('native sidecars: a startupProbe on /readyz holds the app back until the proxy listens, and the drain fits the grace period', () => {
    // "the kubelet starts the next init container [or the app containers] once
    // a sidecar's startupProbe has succeeded" — without one, as soon as its
    // process has started (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/).
    for (const example of EXAMPLES) {
      for (const d of byKind<DeploymentJson>(built.get(example) ?? [], 'Deployment')) {
        const { container, native } = sidecarOf(d);
        if (!native) continue;
        assert.equal(container.startupProbe?.httpGet?.path, '/readyz', `${d.metadata.name}: no startupProbe on /readyz`);
        port(container, String(container.startupProbe?.httpGet?.port));
      }
      const cfg = sidecarConfig(built.get(example) ?? []);
      const seconds = (v: string | undefined) => Number(/^(\d+)s$/.exec(v ?? '')?.[1] ?? NaN);
      assert.ok(seconds(cfg['drain-delay']) > 0, `${example}: no drain-delay`);
      assert.ok(seconds(cfg['drain-delay']) + seconds(cfg['drain-timeout']) < 30, `${example}: drain exceeds terminationGracePeriodSeconds`);
    }
  });

  it('inbound: the app keeps serving through the drain delay, since its native sidecar is stopped only after it exits', () => {
    // "sidecar containers ... are terminated after the main containers" and the endpoint is removed
    // while the app gets SIGTERM (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/):
    // without a preStop the app exits while calls still arrive through the sidecar.
    for (const example of EXAMPLES.filter((e) => e.startsWith('examples/orders'))) {
      const cfg = sidecarConfig(built.get(example) ?? []);
      const delay = Number(/^(\d+)s$/.exec(cfg['drain-delay'] ?? '')?.[1] ?? NaN);
      for (const d of byKind<DeploymentJson>(built.get(example) ?? [], 'Deployment')) {
        for (const app of d.spec.template.spec.containers.filter((c) => c.name !== 'rpcscope')) {
          const sleep = app.lifecycle?.preStop?.sleep?.seconds ?? 0;
          assert.ok(sleep >= delay, `${example}: ${app.name} preStop sleeps ${sleep}s, less than the sidecar's drain-delay ${delay}s`);
        }
      }
    }
  });

  it('a NetworkPolicy admits the admin port from Prometheus only, and every other port from anywhere as before', () => {
    const resources = built.get('examples/orders') ?? [];
    const [policy] = byKind<NetworkPolicyJson>(resources, 'NetworkPolicy');
    assert.ok(policy, 'examples/orders carries the admin-network-policy component');
    const [d] = byKind<DeploymentJson>(resources, 'Deployment');
    assert.ok(d);
    const { container } = sidecarOf(d);
    const admin = port(container, 'rpcscope-admin');
    assert.equal(hostPortOf(sidecarConfig(resources).admin ?? ''), admin, "the config's admin port is the container's");
    assert.ok(selects(policy.spec.podSelector, d.spec.template.metadata.labels), 'the policy selects the pods the sidecar runs in');
    for (const kind of ['inbound', 'outbound']) assert.ok(selects(policy.spec.podSelector, { 'rpcscope.dev/sidecar': kind }), `and every ${kind} sidecar's pod`);
    assert.deepEqual(policy.spec.policyTypes, ['Ingress']);

    const toAdmin = policy.spec.ingress.filter((r) => admits(r, admin));
    assert.equal(toAdmin.length, 1, 'one rule admits the admin port');
    assert.deepEqual(toAdmin[0]?.from, [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } }, podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } } },
    ]);

    const app = d.spec.template.spec.containers.find((c) => c.name !== 'rpcscope');
    const appPorts = (app?.ports ?? []).map((p) => p.containerPort);
    assert.ok(appPorts.length > 0, 'the app declares its port');
    for (const p of [port(container, 'rpcscope-proxy'), ...appPorts, admin - 1, admin + 1, 1, 65535]) {
      assert.ok(policy.spec.ingress.some((r) => !r.from && admits(r, p)), `TCP ${p} stays open to all`);
    }
    assert.ok(policy.spec.ingress.some((r) => !r.from && admits(r, 53, 'UDP')), 'UDP stays open to all');
  });

  it('inbound: the Service sends calls to the sidecar, and the sidecar to the app', () => {
    const resources = built.get('examples/orders') ?? [];
    const config = sidecarConfig(resources);
    const [d] = byKind<DeploymentJson>(resources, 'Deployment');
    assert.ok(d);
    const sidecar = sidecarOf(d).container;
    assert.equal(envValue(sidecar, 'RPCSCOPE_MODE'), 'inbound');
    const proxyPort = port(sidecar, 'rpcscope-proxy');
    assert.equal(proxyPort, hostPortOf(config.listen ?? ''));
    const app = d.spec.template.spec.containers.find((c) => c.name === 'orders');
    assert.ok(app);
    const upstream = new URL(config.upstream ?? '');
    assert.equal(upstream.hostname, '127.0.0.1');
    assert.equal(Number(upstream.port), port(app, 'app'));
    const services = byKind<ServiceJson>(resources, 'Service');
    assert.equal(services.length, 2);
    for (const s of services) {
      assert.deepEqual(s.spec.selector, { 'app.kubernetes.io/name': d.spec.template.metadata.labels['app.kubernetes.io/name'] });
      for (const p of s.spec.ports) assert.equal(p.targetPort, proxyPort, `${s.metadata.name} bypasses the sidecar`);
    }
    assert.equal(services.find((s) => s.metadata.name === 'orders-headless')?.spec.clusterIP, 'None');
  });

  it('outbound: the client\'s sidecar balances over the order pods through their headless Service', () => {
    const client = built.get('examples/client') ?? [];
    const orders = built.get('examples/orders') ?? [];
    const [d] = byKind<DeploymentJson>(client, 'Deployment');
    assert.ok(d);
    const sidecar = sidecarOf(d).container;
    assert.equal(envValue(sidecar, 'RPCSCOPE_MODE'), 'outbound');
    assert.match(envValue(sidecar, 'RPCSCOPE_BALANCE') ?? '', /^(round_robin|least_request|ewma|sticky)$/);
    const listen = envValue(sidecar, 'RPCSCOPE_LISTEN') ?? '';
    assert.ok(listen.startsWith('127.0.0.1:'), 'the outbound listener is only for the app in the pod');
    const app = d.spec.template.spec.containers.find((c) => c.name === 'client') as Container & { args?: string[] };
    assert.ok(app?.args?.includes(`http://${listen}`), 'the app calls its local sidecar');
    const headless = byKind<ServiceJson>(orders, 'Service').find((s) => s.spec.clusterIP === 'None');
    assert.ok(headless);
    const [host, endpointPort] = (envValue(sidecar, 'RPCSCOPE_ENDPOINTS') ?? '').split(':');
    assert.equal(host, `${headless.metadata.name}.${headless.metadata.namespace}.svc.cluster.local`);
    assert.equal(Number(endpointPort), headless.spec.ports[0]?.port);
    assert.notEqual(d.metadata.namespace, headless.metadata.namespace, 'the example crosses namespaces');
  });
});

describe('annotation-based scraping without the Prometheus Operator', () => {
  const file = join(REPO_ROOT, 'deploy', 'prometheus', 'scrape-kubernetes.yml');
  type ScrapeConfig = { job_name: string; kubernetes_sd_configs?: unknown; relabel_configs: unknown[]; [k: string]: unknown };
  const config = parse(readFileSync(file, 'utf8')) as { scrape_configs: ScrapeConfig[]; rule_files: string[] };
  const job = config.scrape_configs[0];

  it('attaches namespace, pod and service to the sidecar\'s admin port only, as the PodMonitor does', async () => {
    assert.ok(job?.kubernetes_sd_configs);
    // Debian's Prometheus is built without Kubernetes discovery, so the pod
    // role's targets are fed through file_sd with the labels it would attach
    // (an app port, the proxy port and the admin port of one pod).
    // A real sidecar's admin port; its upstream is never called.
    const sidecar = await startSidecarProcess(['--upstream', 'http://127.0.0.1:9']);
    const admin = new URL(sidecar.adminUrl).host;
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-sd-'));
    let prom: RunningPrometheus | undefined;
    try {
      const pod = (port: string, name: string, container: string, address: string) => ({
        targets: [address],
        labels: {
          __meta_kubernetes_namespace: 'shop',
          __meta_kubernetes_pod_name: 'orders-7c9d-x2x',
          __meta_kubernetes_pod_label_app_kubernetes_io_name: 'orders',
          __meta_kubernetes_pod_label_rpcscope_dev_sidecar: 'inbound',
          // The app's own annotations, for its own metrics: the job leaves them to the app.
          __meta_kubernetes_pod_annotation_prometheus_io_scrape: 'true',
          __meta_kubernetes_pod_annotation_prometheus_io_port: '8080',
          __meta_kubernetes_pod_annotation_prometheus_io_path: '/app/metrics',
          __meta_kubernetes_pod_container_name: container,
          __meta_kubernetes_pod_container_port_name: name,
          __meta_kubernetes_pod_container_port_number: port,
        },
      });
      writeFileSync(
        join(dir, 'pods.json'),
        JSON.stringify([pod('8080', 'app', 'orders', '127.0.0.1:9'), pod('14001', 'rpcscope-proxy', 'rpcscope', '127.0.0.1:9'), pod('14090', 'rpcscope-admin', 'rpcscope', admin)]),
      );
      const { kubernetes_sd_configs: _k8s, ...rest } = job;
      const staticJob = { ...rest, file_sd_configs: [{ files: [join(dir, 'pods.json')] }] };
      prom = await startPrometheus({ targets: [], rawScrapeConfigs: [staticJob] });
      const up = await prom.waitForData('up{job="rpcscope"}');
      assert.equal(up.length, 1, JSON.stringify(up));
      const labels = up[0]?.metric ?? {};
      assert.equal(labels.namespace, 'shop');
      assert.equal(labels.pod, 'orders-7c9d-x2x');
      assert.equal(labels.service, 'orders');
      assert.equal(labels.instance, admin);
      assert.equal(up[0]?.value[1], '1');
      const check = join(dir, 'check.yml');
      writeFileSync(check, stringify({ ...config, rule_files: [], scrape_configs: [staticJob] }));
      const r = promtool(['check', 'config', check]);
      assert.ok(r.ok, r.output);
    } finally {
      await prom?.stop();
      await sidecar.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names service after the workload when a pod has no app.kubernetes.io/name, in both the job and the PodMonitor', async () => {
    const podMonitor = parse(readFileSync(join(K8S, 'base', 'podmonitor.yaml'), 'utf8')) as PodMonitorJson;
    const relabelings = podMonitor.spec.podMetricsEndpoints[0]?.relabelings ?? [];
    // The operator's relabelings are Prometheus relabel_configs in camelCase.
    const asRelabelConfig = (r: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), v]));
    // What the Prometheus Operator writes before a PodMonitor's own relabelings.
    const OPERATOR_TARGET_LABELS = [
      { source_labels: ['__meta_kubernetes_namespace'], target_label: 'namespace' },
      { source_labels: ['__meta_kubernetes_pod_container_name'], target_label: 'container' },
      { source_labels: ['__meta_kubernetes_pod_name'], target_label: 'pod' },
    ];
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-sd-'));
    let prom: RunningPrometheus | undefined;
    try {
      // Nothing listens on ports 9 and 10: the targets are down, their up series still carry the labels.
      const pod = (name: string, kind: string, owner: string, appName: string | undefined, address: string) => ({
        targets: [address],
        labels: {
          __meta_kubernetes_namespace: 'shop',
          __meta_kubernetes_pod_name: name,
          __meta_kubernetes_pod_controller_kind: kind,
          __meta_kubernetes_pod_controller_name: owner,
          ...(appName === undefined ? {} : { __meta_kubernetes_pod_label_app_kubernetes_io_name: appName }),
          __meta_kubernetes_pod_label_rpcscope_dev_sidecar: 'inbound',
          __meta_kubernetes_pod_container_name: 'rpcscope',
          __meta_kubernetes_pod_container_port_name: 'rpcscope-admin',
        },
      });
      const pods = (address: string) => [
        pod('orders-7c9d5f-x2x', 'ReplicaSet', 'orders-7c9d5f', 'orders', address),
        pod('payments-6b8f7d9c4-abcde', 'ReplicaSet', 'payments-6b8f7d9c4', undefined, address),
        pod('ledger-0', 'StatefulSet', 'ledger', undefined, address),
        pod('node-agent-q8z7p', 'DaemonSet', 'node-agent', undefined, address),
      ];
      writeFileSync(join(dir, 'job.json'), JSON.stringify(pods('127.0.0.1:9')));
      writeFileSync(join(dir, 'podmonitor.json'), JSON.stringify(pods('127.0.0.1:10')));
      const { kubernetes_sd_configs: _k8s, ...rest } = job ?? ({} as ScrapeConfig);
      prom = await startPrometheus({
        targets: [],
        rawScrapeConfigs: [
          { ...rest, file_sd_configs: [{ files: [join(dir, 'job.json')] }] },
          { job_name: 'podmonitor', file_sd_configs: [{ files: [join(dir, 'podmonitor.json')] }], relabel_configs: [...OPERATOR_TARGET_LABELS, ...relabelings.map((r) => asRelabelConfig(r))] },
        ],
      });
      const deadline = Date.now() + 30_000;
      let up: { metric: Record<string, string> }[] = [];
      while (up.length < 8 && Date.now() < deadline) {
        up = await prom.query('up');
        if (up.length < 8) await new Promise((r) => setTimeout(r, 500));
      }
      const services = (port: string) =>
        Object.fromEntries(up.filter((s) => s.metric.instance?.endsWith(`:${port}`)).map((s) => [s.metric.pod, s.metric.service]));
      const expected = { 'orders-7c9d5f-x2x': 'orders', 'payments-6b8f7d9c4-abcde': 'payments', 'ledger-0': 'ledger', 'node-agent-q8z7p': 'node-agent' };
      assert.deepEqual(services('9'), expected, 'scrape-kubernetes.yml');
      assert.deepEqual(services('10'), expected, 'PodMonitor');
      // RpcscopeTargetDown reads job="rpcscope" whichever way the sidecar is scraped.
      assert.deepEqual([...new Set(up.map((s) => s.metric.job))], ['rpcscope']);
    } finally {
      await prom?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('loads the rpcscope rules', () => {
    assert.deepEqual(config.rule_files, ['rules/rpcscope.rules.yml']);
  });
});
