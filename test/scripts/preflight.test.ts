// scripts/preflight.mjs as `npm test` runs it first: on a PATH without the
// programs the suites drive it stops with one line naming them and the
// apt-get command; on this machine's PATH it passes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain JavaScript module (it runs before tsx is installed), without type declarations.
import { locate, testPath } from '../../scripts/preflight.mjs';

const PREFLIGHT = fileURLToPath(new URL('../../scripts/preflight.mjs', import.meta.url));
// `npm test` points the suites at what it found; the check must not see those here.
const OVERRIDES = ['RPCSCOPE_PROMETHEUS', 'RPCSCOPE_PROMTOOL', 'RPCSCOPE_CHROMIUM', 'RPCSCOPE_DNSMASQ', 'RPCSCOPE_PYTHON_GRPCIO'];

function preflight(path: string): { status: number | null; lines: string[] } {
  const env: Record<string, string | undefined> = { ...process.env, PATH: path, RPCSCOPE_NO_INSTALL: '1' };
  for (const k of OVERRIDES) delete env[k];
  const r = spawnSync(process.execPath, [PREFLIGHT], { env, encoding: 'utf8' });
  return { status: r.status, lines: `${r.stdout}${r.stderr}`.split('\n').filter(Boolean) };
}

describe('npm test preflight', () => {
  const empty = mkdtempSync(join(tmpdir(), 'rpcscope-preflight-'));
  after(() => rmSync(empty, { recursive: true, force: true }));

  it('names every missing program and the command that installs them, in one line, and fails', () => {
    const r = preflight(empty);
    assert.notEqual(r.status, 0);
    assert.equal(r.lines.length, 1, r.lines.join('\n'));
    assert.equal(
      r.lines[0],
      'rpcscope: the tests need programs that are not installed: prometheus, promtool, chromium, dnsmasq, ip, iptables, openssl, curl, nghttp, h2load, kubectl, python3 with grpc, go with google.golang.org/grpc; ' +
        `install them with: ${process.getuid?.() === 0 ? '' : 'sudo '}apt-get install -y prometheus chromium dnsmasq-base iproute2 iptables openssl curl nghttp2-client kubectl python3-grpcio golang-go golang-google-grpc-dev`,
    );
  });

  it('names only what is missing, each Debian package once', () => {
    const some = mkdtempSync(join(empty, 'some-'));
    const found = (locate({ PATH: testPath(process.env.PATH) }) as { program: string; path?: string }[]).filter((p) => ['promtool', 'openssl'].includes(p.program));
    for (const p of found) symlinkSync(p.path ?? '', join(some, p.program));
    const r = preflight(some);
    assert.notEqual(r.status, 0);
    assert.equal(r.lines.length, 1, r.lines.join('\n'));
    assert.match(r.lines[0] ?? '', /not installed: prometheus, chromium, dnsmasq, ip, iptables, curl, nghttp, h2load, kubectl, python3 with grpc, go with google.golang.org\/grpc; install them with: (sudo )?apt-get install -y prometheus chromium dnsmasq-base iproute2 iptables curl nghttp2-client kubectl python3-grpcio golang-go golang-google-grpc-dev$/);
  });

  it('passes silently with the PATH npm test uses on this machine', () => {
    const r = preflight(testPath(process.env.PATH));
    assert.deepEqual(r, { status: 0, lines: [] });
  });
});
