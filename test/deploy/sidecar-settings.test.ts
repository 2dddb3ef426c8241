// Every way the repository starts the sidecar — the Kubernetes examples and the
// docker-compose stack — passes settings the sidecar itself accepts: its own
// config loader reads each container's args, RPCSCOPE_* environment and mounted
// config file, as it would at start. A renamed or mistyped flag fails here, not
// in a user's cluster.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { loadConfig, type Config } from '../../sidecar/src/config/load.ts';
import { kustomize, type Resource } from './kustomize.ts';
import { REPO_ROOT } from './metrics-contract.ts';

const CONFIG_PATH = '/etc/rpcscope/rpcscope.yaml';
const EXAMPLES = ['examples/orders', 'examples/orders-legacy', 'examples/client'];

type Container = { name: string; image?: string; args?: string[]; command?: string[]; env?: { name: string; value?: string }[] };

/** The container's settings as the sidecar sees them, with the mounted config file at a local path. */
function settings(args: string[], env: Record<string, string>, configText: string): Config {
  const file = join(mkdtempSync(join(tmpdir(), 'rpcscope-settings-')), 'rpcscope.yaml');
  writeFileSync(file, configText);
  const result = loadConfig(args.map((a) => (a === CONFIG_PATH ? file : a)), { ...env, RPCSCOPE_CONFIG: env.RPCSCOPE_CONFIG === CONFIG_PATH ? file : env.RPCSCOPE_CONFIG });
  assert.equal(result.kind, 'run');
  return (result as { config: Config }).config;
}

function rpcscopeEnv(c: Container): Record<string, string> {
  return Object.fromEntries((c.env ?? []).filter((e) => e.name.startsWith('RPCSCOPE_') && e.value !== undefined).map((e) => [e.name, e.value!]));
}

describe('the sidecar accepts the settings the repository ships', () => {
  for (const example of EXAMPLES) {
    it(`Kubernetes ${example}`, () => {
      const resources: Resource[] = kustomize(join(REPO_ROOT, 'deploy', 'kubernetes', example));
      const configMap = resources.find((r) => r.kind === 'ConfigMap' && (r as { data?: Record<string, string> }).data?.['rpcscope.yaml'] !== undefined) as { data: Record<string, string> } | undefined;
      let sidecars = 0;
      for (const d of resources.filter((r) => r.kind === 'Deployment')) {
        const spec = (d as unknown as { spec: { template: { spec: { containers: Container[]; initContainers?: Container[] } } } }).spec.template.spec;
        for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
          if (!c.image?.includes('rpcscope') || c.image.includes('demo')) continue;
          sidecars++;
          assert.ok(configMap || !(c.args ?? []).includes(CONFIG_PATH), `${example}: ${c.name} mounts a config file no ConfigMap provides`);
          const config = settings(c.args ?? [], rpcscopeEnv(c), configMap?.data['rpcscope.yaml'] ?? '');
          // The probes and the scrape find the admin port the settings give.
          assert.equal(config.admin.port, 14090, `${example}: ${c.name}`);
        }
      }
      assert.ok(sidecars > 0, `${example}: no rpcscope container found`);
    });
  }

  it('docker-compose.yml', () => {
    const compose = parse(readFileSync(join(REPO_ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, { command?: string[]; environment?: Record<string, string> | string[]; volumes?: string[] }> };
    let sidecars = 0;
    for (const [name, svc] of Object.entries(compose.services)) {
      if (!(svc.command ?? []).includes(CONFIG_PATH)) continue;
      sidecars++;
      const env = Array.isArray(svc.environment) ? Object.fromEntries(svc.environment.map((e) => e.split('=', 2) as [string, string])) : (svc.environment ?? {});
      const mount = (svc.volumes ?? []).find((v) => v.split(':')[1] === CONFIG_PATH);
      assert.ok(mount, `${name} mounts its config file`);
      const config = settings(svc.command!, Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('RPCSCOPE_')).map(([k, v]) => [k, String(v)])), readFileSync(join(REPO_ROOT, mount!.split(':')[0]!), 'utf8'));
      assert.ok(config.upstream.href.startsWith('http'), name);
    }
    assert.ok(sidecars >= 4, `sidecars in compose: ${sidecars}`);
  });
});
