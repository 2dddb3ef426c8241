#!/usr/bin/env node
// Before `npm test` runs anything: are the programs the suites drive installed?
// Missing ones are installed with apt-get where that can work (root on
// Debian/Ubuntu); otherwise the run stops here with one line naming them and
// the command that installs them, instead of suites failing one by one.
//
//   node scripts/preflight.mjs      check (and install); exit 0 when all are there
//   RPCSCOPE_NO_INSTALL=1           never install, only name what is missing
//
// Plain JavaScript: it runs before the workspace (and tsx) is installed.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The programs the test suites start, the Debian package of each, and the
 * variable a test reads to find it elsewhere. Not here: nginx (the load
 * benchmark only). A suite that needs a program not listed must skip, and say so,
 * never pass with nothing checked.
 */
export const PROGRAMS = [
  { program: 'prometheus', pkg: 'prometheus', env: 'RPCSCOPE_PROMETHEUS' }, // test/support/prometheus.ts
  { program: 'promtool', pkg: 'prometheus', env: 'RPCSCOPE_PROMTOOL' }, // test/deploy/promql.ts
  { program: 'chromium', pkg: 'chromium', env: 'RPCSCOPE_CHROMIUM' }, // test/panel/panel.test.ts
  { program: 'dnsmasq', pkg: 'dnsmasq-base', env: 'RPCSCOPE_DNSMASQ' }, // test/fleet/dns-server.ts
  { program: 'ip', pkg: 'iproute2', env: undefined }, // test/cluster/netns.ts: pods as network namespaces
  { program: 'iptables', pkg: 'iptables', env: undefined }, // test/cluster/kube-proxy-rules.ts: the Service VIP's DNAT, blackholes
  { program: 'openssl', pkg: 'openssl', env: undefined }, // sidecar/test/support/certs.ts
  { program: 'curl', pkg: 'curl', env: undefined }, // test/acceptance/data-plane-http-versions.test.ts
  { program: 'nghttp', pkg: 'nghttp2-client', env: undefined }, // test/acceptance/relay-equivalence.test.ts
  { program: 'h2load', pkg: 'nghttp2-client', env: undefined }, // test/acceptance/relay-equivalence.test.ts
  { program: 'kubectl', pkg: 'kubectl', env: undefined }, // test/deploy/kustomize.ts (kubernetes, injection and kube-prometheus-stack tests)
  // A gRPC C-core server for interop (sidecar/test/support/server-process.ts): a python3 that imports grpc.
  { program: 'python3', pkg: 'python3-grpcio', env: 'RPCSCOPE_PYTHON_GRPCIO', module: 'grpc' },
  // grpc-go for interop (test/reliability/interop/peers.ts): go, and Debian's grpc-go sources, built in GOPATH mode.
  { program: 'go', pkg: 'golang-go golang-google-grpc-dev', env: undefined, goPackage: 'google.golang.org/grpc' },
];

// Debian installs dnsmasq in /usr/sbin, which a non-root user's PATH often lacks.
const SBIN = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/** PATH with the sbin directories appended, as the test run uses it. */
export function testPath(path = process.env.PATH ?? '') {
  const dirs = path.split(delimiter).filter(Boolean);
  return [...dirs, ...SBIN.filter((d) => !dirs.includes(d))].join(delimiter);
}

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Absolute path of each program (its variable first, then PATH), or undefined. */
export function locate(env = process.env) {
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  return PROGRAMS.map((p) => {
    const given = p.env ? env[p.env] : undefined;
    const usable = (file) =>
      executable(file) &&
      (!p.module || spawnSync(file, ['-c', `import ${p.module}`], { stdio: 'ignore' }).status === 0) &&
      (!p.goPackage || existsSync(join(env.RPCSCOPE_GOPATH ?? '/usr/share/gocode', 'src', p.goPackage)));
    const found = given ? (usable(given) ? given : undefined) : dirs.map((d) => join(d, p.program)).find(usable);
    return { ...p, path: found };
  });
}

/** How a program is named to the user: `python3 with grpc` when a module is what is missing. */
const named = (p) => (p.module || p.goPackage ? `${p.program} with ${p.module ?? p.goPackage}` : p.program);

const packagesOf = (missing) => [...new Set(missing.flatMap((p) => p.pkg.split(' ')))];

/** Whether apt-get can install here: root, Debian or Ubuntu, apt-get on PATH. */
function canInstall(env) {
  if (env.RPCSCOPE_NO_INSTALL) return false;
  if (process.getuid?.() !== 0 || !existsSync('/etc/debian_version')) return false;
  return (env.PATH ?? '').split(delimiter).some((d) => d && executable(join(d, 'apt-get')));
}

function aptGet(args, env) {
  const r = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...env, DEBIAN_FRONTEND: 'noninteractive' } });
  return r.status === 0;
}

/**
 * Checks, installs what is missing where it can, checks again. Returns the
 * located programs, or a one-line message naming what is still missing.
 */
export function preflight(env = process.env, say = (line) => process.stdout.write(`${line}\n`)) {
  let programs = locate(env);
  let missing = programs.filter((p) => !p.path);
  if (missing.length > 0 && canInstall(env)) {
    const pkgs = packagesOf(missing);
    say(`rpcscope: the tests need ${missing.map(named).join(', ')}; installing Debian packages: apt-get install -y ${pkgs.join(' ')}`);
    if (aptGet(['update', '-qq'], env) && aptGet(['install', '-y', '-qq', ...pkgs], env)) {
      programs = locate(env);
      missing = programs.filter((p) => !p.path);
    }
  }
  if (missing.length === 0) return { ok: true, programs };
  const sudo = process.getuid?.() === 0 ? '' : 'sudo ';
  return {
    ok: false,
    programs,
    message: `rpcscope: the tests need programs that are not installed: ${missing.map(named).join(', ')}; install them with: ${sudo}apt-get install -y ${packagesOf(missing).join(' ')}`,
  };
}

/** The variables that point each test at the program this check found. */
export function programEnv(programs) {
  return Object.fromEntries(programs.filter((p) => p.env && p.path).map((p) => [p.env, p.path]));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = preflight();
  if (!result.ok) {
    process.stderr.write(`${result.message}\n`);
    process.exit(1);
  }
}
