// docker-compose.yml and what it builds and mounts, checked without a Docker
// engine: services, build contexts and Dockerfiles that exist, and ports,
// hostnames and URLs that agree across the compose file, the sidecar config,
// Prometheus and Grafana provisioning. The demo's own entry point and traffic
// flags are exercised for real.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { parseTrafficArgs } from '../../demo/src/traffic-args.ts';
import { REPO_ROOT } from './metrics-contract.ts';
import { freePort } from '../support/prometheus.ts';
import { promtool } from './promql.ts';

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  network_mode?: string;
  depends_on?: string[] | Record<string, { condition: string }>;
  ports?: string[];
  healthcheck?: { test: string[] };
}

const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
const services = compose.services;
const PLUGIN_ID = 'rpcscope-protocolcompare-panel';
const ORDER_PODS = ['orders-0', 'orders-1', 'orders-2'];

function service(name: string): ComposeService {
  const s = services[name];
  assert.ok(s, `no service ${name}`);
  return s;
}

/** host path -> container path of a service's bind mounts, host paths resolved from the repository root. */
function mounts(s: ComposeService): Map<string, string> {
  return new Map(
    (s.volumes ?? []).map((v) => {
      const [host = '', container = ''] = v.split(':');
      return [resolve(REPO_ROOT, host), container];
    }),
  );
}

function mountedFile(s: ComposeService, containerPath: string): string {
  for (const [host, container] of mounts(s)) {
    if (containerPath === container) return host;
    if (containerPath.startsWith(`${container}/`)) return join(host, containerPath.slice(container.length + 1));
  }
  assert.fail(`${containerPath} is not mounted`);
}

function flag(args: string[] | undefined, name: string): string | undefined {
  const i = args?.indexOf(name) ?? -1;
  return i >= 0 ? args?.[i + 1] : undefined;
}

/** The sidecar's effective setting: environment over config file, as the sidecar reads them. */
function sidecarSetting(s: ComposeService, key: string): string | undefined {
  const env = s.environment?.[`RPCSCOPE_${key.toUpperCase().replace(/-/g, '_')}`];
  if (env !== undefined) return env;
  const config = flag(s.command, '--config');
  assert.ok(config, 'sidecar without --config');
  return (parse(readFileSync(mountedFile(s, config), 'utf8')) as Record<string, string>)[key];
}

function portOf(hostPort: string): number {
  return Number(hostPort.split(':').pop());
}

const sidecars = Object.entries(services).filter(([, s]) => s.build?.dockerfile === 'deploy/docker/sidecar.Dockerfile');

describe('docker-compose.yml', () => {
  it('has three order pods with inbound sidecars, a client with an outbound sidecar, traffic, Prometheus and Grafana', () => {
    for (const pod of ORDER_PODS) {
      assert.equal(service(pod).build?.dockerfile, 'deploy/docker/demo.Dockerfile');
      assert.equal(service(`${pod}-rpcscope`).network_mode, `service:${pod}`, `${pod}'s sidecar shares its network namespace`);
      assert.equal(sidecarSetting(service(`${pod}-rpcscope`), 'mode'), 'inbound');
    }
    assert.equal(sidecarSetting(service('client'), 'mode'), 'outbound');
    assert.equal(service('client-traffic').network_mode, 'service:client');
    assert.ok(service('sticky-traffic'));
    assert.match(service('prometheus').image ?? '', /^prom\/prometheus:v\d+\.\d+\.\d+$/);
    assert.equal(service('grafana').build?.dockerfile, 'deploy/docker/grafana.Dockerfile');
    assert.equal(sidecars.length, 4);
  });

  it('builds from the repository root with Dockerfiles that exist, are multi-stage, run as a numeric non-root user, and copy only what exists', () => {
    const workspace = (parse(readFileSync(join(REPO_ROOT, 'pnpm-workspace.yaml'), 'utf8')) as { packages: string[] }).packages;
    const dockerfiles = new Set<string>();
    for (const [name, s] of Object.entries(services)) {
      if (!s.build) continue;
      assert.equal(resolve(REPO_ROOT, s.build.context), REPO_ROOT, `${name} builds from the repository root`);
      dockerfiles.add(s.build.dockerfile);
    }
    assert.deepEqual([...dockerfiles].sort(), ['deploy/docker/demo.Dockerfile', 'deploy/docker/grafana.Dockerfile', 'deploy/docker/sidecar.Dockerfile']);
    for (const file of dockerfiles) {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8');
      const stages = text.split(/^FROM /m).slice(1);
      assert.ok(stages.length >= 2, `${file} is multi-stage`);
      for (const m of text.matchAll(/^COPY (?!--from)(?:--\S+ )*(.+) (\S+)$/gm)) {
        for (const src of (m[1] ?? '').split(' ')) assert.ok(existsSync(join(REPO_ROOT, src)), `${file}: COPY ${src} does not exist`);
      }
      for (const pkg of workspace) assert.match(text, new RegExp(`^COPY ${pkg}/package.json ${pkg}/$`, 'm'), `${file} copies ${pkg}/package.json for the frozen lockfile`);
      assert.match(text, /npm install -g pnpm@12\.4\.2/);
      assert.match(text, /--frozen-lockfile/);
      if (file !== 'deploy/docker/grafana.Dockerfile') {
        const final = stages[stages.length - 1] ?? '';
        assert.match(final, /^USER [1-9]\d*:[1-9]\d*$/m, `${file} runs as a numeric non-root user`);
      }
    }
    const sidecar = readFileSync(join(REPO_ROOT, 'deploy/docker/sidecar.Dockerfile'), 'utf8');
    assert.match(sidecar, /ENTRYPOINT \["\/app\/sidecar\/bin\/rpcscope"\]/);
  });

  it('builds on a pinned Node 24 image, and the sidecar image carries only the bundle, with a HEALTHCHECK on the admin port', () => {
    for (const file of ['demo', 'grafana', 'sidecar']) {
      const text = readFileSync(join(REPO_ROOT, `deploy/docker/${file}.Dockerfile`), 'utf8');
      assert.match(text, /^ARG NODE_IMAGE=node:24\.\d+\.\d+-bookworm-slim$/m, `${file}.Dockerfile pins a Node 24 release`);
    }
    const sidecar = readFileSync(join(REPO_ROOT, 'deploy/docker/sidecar.Dockerfile'), 'utf8');
    const final = sidecar.split(/^FROM /m).at(-1) ?? '';
    const copies = [...final.matchAll(/^COPY (.+)$/gm)].map((m) => (m[1] ?? '').replace(/--chown=\S+ /, ''));
    assert.deepEqual(copies, ['--from=build /src/sidecar/dist dist', 'sidecar/bin/rpcscope bin/rpcscope'], 'the final image holds the bundle and its launcher, nothing else');
    assert.doesNotMatch(final, /^RUN /m, 'nothing is installed into the final image');
    const health = /^HEALTHCHECK .*\\\n\s*CMD (\[.*\])$/m.exec(final);
    assert.ok(health, 'sidecar.Dockerfile has a HEALTHCHECK');
    const [cmd, flag, script] = JSON.parse(health[1] ?? '[]') as string[];
    assert.deepEqual([cmd, flag], ['node', '-e'], 'slim has no curl: the check is Node\'s fetch');
    assert.match(script ?? '', /fetch\('http:\/\/127\.0\.0\.1:14090\/(readyz|healthz)'\)/);
    // The launcher runs the bundle on the image's own node, with Node options only before it.
    assert.match(readFileSync(join(REPO_ROOT, 'sidecar/bin/rpcscope'), 'utf8'), /^exec node (?:--[a-z0-9-]+(?:=\S+)? )*"\$bundle" "\$@"$/m);
    assert.ok(statSync(join(REPO_ROOT, 'sidecar/bin/rpcscope')).mode & 0o111, 'sidecar/bin/rpcscope is executable');
  });

  it('routes every inbound sidecar to its app\'s port over loopback', () => {
    for (const pod of ORDER_PODS) {
      const app = service(pod);
      const sidecar = service(`${pod}-rpcscope`);
      const upstream = new URL(sidecarSetting(sidecar, 'upstream') ?? '');
      assert.equal(upstream.hostname, '127.0.0.1');
      assert.equal(upstream.port, app.environment?.PORT);
      assert.equal(app.environment?.HOST, '127.0.0.1', 'only the sidecar can reach the app');
      assert.equal(sidecar.environment?.POD_NAME, pod);
      assert.equal(portOf(sidecarSetting(sidecar, 'listen') ?? ''), 14001);
    }
  });

  it('sends the client\'s traffic through its outbound sidecar to every order pod\'s inbound sidecar', () => {
    const outbound = service('client');
    const listen = sidecarSetting(outbound, 'listen') ?? '';
    assert.ok(listen.startsWith('127.0.0.1:'));
    const traffic = parseTrafficArgs(service('client-traffic').command?.slice(4) ?? []);
    assert.equal(traffic.target, `http://${listen}`);
    const endpoints = (sidecarSetting(outbound, 'endpoints') ?? '').split(',');
    assert.deepEqual(endpoints, ORDER_PODS.map((p) => `${p}:${portOf(sidecarSetting(service(`${p}-rpcscope`), 'listen') ?? '')}`));
    const sticky = parseTrafficArgs(service('sticky-traffic').command?.slice(4) ?? []);
    assert.equal(sticky.target, `http://orders-0:${portOf(sidecarSetting(service('orders-0-rpcscope'), 'listen') ?? '')}`);
    for (const t of ['client-traffic', 'sticky-traffic']) assert.deepEqual(service(t).command?.slice(0, 4), ['node', '--import', 'tsx', 'src/traffic-cli.ts']);
  });

  it('has Prometheus scrape each sidecar\'s admin port with the cluster\'s target labels, and load the rules', () => {
    const prom = service('prometheus');
    const configFile = mountedFile(prom, flag(prom.command?.map((c) => c.split('=')).flat(), '--config.file') ?? '/etc/prometheus/prometheus.yml');
    const config = parse(readFileSync(configFile, 'utf8')) as {
      rule_files: string[];
      scrape_configs: { static_configs: { targets: string[]; labels: Record<string, string> }[] }[];
    };
    const targets = config.scrape_configs.flatMap((j) => j.static_configs);
    const expected = sidecars.map(([name, s]) => {
      const host = s.network_mode?.replace(/^service:/, '') ?? name;
      return `${host}:${portOf(sidecarSetting(s, 'admin') ?? '')}`;
    });
    assert.deepEqual(targets.map((t) => t.targets[0]).sort(), expected.sort());
    for (const t of targets) {
      assert.deepEqual(Object.keys(t.labels).sort(), ['namespace', 'pod', 'service']);
      const host = t.targets[0]?.split(':')[0] ?? '';
      const podName = services[host]?.environment?.POD_NAME ?? services[`${host}-rpcscope`]?.environment?.POD_NAME;
      assert.equal(t.labels.pod, podName, `${host} is labelled as its pod`);
    }
    const rules = config.rule_files.map((r) => mountedFile(prom, r));
    assert.deepEqual(rules, [join(REPO_ROOT, 'deploy/prometheus/rules/rpcscope.rules.yml')]);
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-compose-'));
    try {
      const local = join(dir, 'prometheus.yml');
      writeFileSync(local, stringify({ ...config, rule_files: rules }));
      const r = promtool(['check', 'config', local]);
      assert.ok(r.ok, r.output);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has Grafana load the plugin unsigned by name, the Prometheus data source and the committed dashboards', () => {
    const grafana = service('grafana');
    assert.equal(grafana.environment?.GF_PLUGINS_ALLOW_LOADING_UNSIGNED_PLUGINS, PLUGIN_ID);
    assert.match(readFileSync(join(REPO_ROOT, 'deploy/docker/grafana.Dockerfile'), 'utf8'), new RegExp(`/var/lib/grafana/plugins/${PLUGIN_ID}$`, 'm'));
    const ds = parse(readFileSync(mountedFile(grafana, '/etc/grafana/provisioning/datasources/rpcscope.yaml'), 'utf8')) as {
      datasources: { type: string; url: string; isDefault: boolean; jsonData: { timeInterval: string } }[];
    };
    const [prom] = ds.datasources;
    assert.ok(prom);
    assert.equal(prom.type, 'prometheus');
    assert.ok(prom.isDefault);
    const url = new URL(prom.url);
    assert.ok(services[url.hostname], `${url.hostname} is a compose service`);
    assert.ok(service(url.hostname).ports?.some((p) => portOf(p) === Number(url.port)));
    const promConfig = parse(readFileSync(join(REPO_ROOT, 'deploy/docker/prometheus.yml'), 'utf8')) as { global: { scrape_interval: string } };
    assert.equal(prom.jsonData.timeInterval, promConfig.global.scrape_interval);
    const providers = parse(readFileSync(mountedFile(grafana, '/etc/grafana/provisioning/dashboards/rpcscope.yaml'), 'utf8')) as {
      providers: { type: string; options: { path: string } }[];
    };
    const path = providers.providers[0]?.options.path ?? '';
    assert.equal(mountedFile(grafana, path), join(REPO_ROOT, 'dashboards'));
    for (const f of ['rpc-overview.json', 'http2-load-balance.json', 'protocol-migration.json']) assert.ok(existsSync(join(REPO_ROOT, 'dashboards', f)));
    const home = grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ?? '';
    assert.ok(existsSync(mountedFile(grafana, home)));
  });

  it('gives every sidecar a readiness healthcheck on its admin port, and starts traffic only when sidecars are ready', () => {
    for (const [name, s] of sidecars) {
      const check = s.healthcheck?.test.join(' ') ?? '';
      assert.ok(check.includes(`127.0.0.1:${portOf(sidecarSetting(s, 'admin') ?? '')}/readyz`), `${name} healthcheck`);
    }
    for (const t of ['client-traffic', 'sticky-traffic', 'client']) {
      const deps = service(t).depends_on as Record<string, { condition: string }>;
      for (const d of Object.values(deps)) assert.equal(d.condition, 'service_healthy');
    }
  });
});

describe('demo image entry point', () => {
  it('starts one order service replica from HOST, PORT and POD_NAME and answers REST', async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'deploy/docker/order-service.mts')], {
      cwd: join(REPO_ROOT, 'demo'),
      env: { ...process.env, HOST: '127.0.0.1', PORT: String(port), POD_NAME: 'orders-7' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', r));
    try {
      await new Promise<void>((ok, fail) => {
        child.stdout.once('data', () => ok());
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${stderr}`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/v1/orders`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('x-pod'), 'orders-7');
      await res.arrayBuffer();
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
    }
  });
});
