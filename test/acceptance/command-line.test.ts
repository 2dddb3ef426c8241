// Acceptance: the operator's tooling on the real command — --version, --check
// and --help as a shell or a CI step runs them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RPCSCOPE_BIN, startSidecarProcess } from '../support/sidecar-process.ts';

const fixtures = join(import.meta.dirname, '../../sidecar/test/fixtures');
const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../../sidecar/package.json'), 'utf8')) as { version: string };

/** Runs the command as a shell would, off any RPCSCOPE_* variables of the test's own environment. */
function rpcscope(args: string[], env: Record<string, string> = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('RPCSCOPE_')));
  return spawnSync(RPCSCOPE_BIN, args, { encoding: 'utf8', env: { ...clean, ...env }, timeout: 20_000 });
}

describe('rpcscope --version', () => {
  it('prints the package version and exits 0, whatever else is on the command line', () => {
    for (const args of [['--version'], ['--upstream', 'http://127.0.0.1:1', '--version']]) {
      const r = rpcscope(args);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `rpcscope ${version}\n`);
    }
  });
});

describe('rpcscope --check', () => {
  it('reads the routes, operations and .proto files, prints the effective settings and the counts, and exits 0 without binding', async () => {
    // The ports a start would bind are taken: a check must not care.
    const held = net.createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    const port = (held.address() as AddressInfo).port;
    try {
      const r = rpcscope(
        ['--check', '--upstream', 'http://127.0.0.1:8080', '--listen', `127.0.0.1:${port}`, '--routes', join(fixtures, 'routing/routes.txt'), '--operations', join(fixtures, 'routing/operations.yaml'), '--proto', join(fixtures, 'protos')],
        { RPCSCOPE_ADMIN: `127.0.0.1:${port}` },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, new RegExp(`^rpcscope ${version.replace(/\./g, '\\.')}: settings ok \\(inbound, upstream http://127\\.0\\.0\\.1:8080\\)$`, 'm'));
      assert.match(r.stdout, new RegExp(`^ {2}listen +127\\.0\\.0\\.1:${port} +\\(flag\\)$`, 'm'));
      assert.match(r.stdout, new RegExp(`^ {2}admin +127\\.0\\.0\\.1:${port} +\\(env RPCSCOPE_ADMIN\\)$`, 'm'));
      assert.match(r.stdout, /^ {2}drain-timeout +20s +\(default\)$/m);
      assert.match(r.stdout, /^ {2}grpc-upstream +- +\(unset\)$/m);
      assert.match(r.stdout, /^ {2}routes: 14 \(5 from --routes, 9 from google\.api\.http\)$/m);
      assert.match(r.stdout, /^ {2}operations: 3 from --operations$/m);
      assert.match(r.stdout, /^ {2}proto methods: 9$/m);
    } finally {
      await new Promise((resolve) => held.close(resolve));
    }
  });

  for (const [args, message] of [
    [['--routes', join(fixtures, 'protos/order/v1/order.proto')], /^rpcscope: --routes: .*order\.proto:1: .* is not "<METHOD> <path template>"/],
    [['--proto', join(fixtures, 'routing')], /^rpcscope: --proto: .*: no \.proto files found$/m],
    [['--tls-cert', join(fixtures, 'routing/routes.txt'), '--tls-key', join(fixtures, 'routing/routes.txt')], /^rpcscope: --tls-cert: /],
    [['--access-log-sample', '1.5'], /^rpcscope: --access-log-sample: invalid value "1.5": expected a number from 0 to 1/],
    [['--histograms', 'sparse'], /^rpcscope: --histograms: invalid value "sparse": expected one of classic, native, both$/m],
  ] as const) {
    it(`exits 2 with one line for ${args[0]} ${args[1].replace(fixtures, '…')}`, () => {
      const r = rpcscope(['--check', '--upstream', 'http://127.0.0.1:8080', ...args]);
      assert.equal(r.status, 2);
      assert.equal(r.stdout, '');
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    });
  }
});

describe('rpcscope --help', () => {
  it('aligns every help text in one column, two spaces or more after the longest flag', () => {
    const r = rpcscope(['--help']);
    assert.equal(r.status, 0);
    const rows = r.stdout.split('\n').filter((l) => l.startsWith('  '));
    const flagRows = rows.filter((l) => l.startsWith('  --'));
    assert.ok(flagRows.length > 20);
    const column = /^ {2}\S+(?: \S+)? {2,}/.exec(flagRows[0]!)![0].length;
    for (const row of rows) {
      // Every row's text starts at the column: flag rows, wrapped lines and env lines alike.
      assert.ok(row.length > column && row[column] !== ' ' && row.slice(0, column).trimEnd().length <= column - 2, JSON.stringify(row));
    }
    // Flag names are lower case, digits allowed (--http1-data-plane).
    for (const row of flagRows) assert.match(row.slice(0, column), /^ {2}--[a-z][a-z0-9-]*(?: \S+)? {2,}$/, row);
    assert.match(r.stdout, /^ {2}--balance round_robin\|least_request\|ewma\|sticky {2}outbound:/m);
    assert.match(r.stdout, /^ {2}--access-log off\|stdout\|stderr\|FILE +one JSON line per call/m);
    assert.ok(r.stdout.split('\n').every((l) => l.length <= 110));
  });
});

describe('the rpcscope command', () => {
  /** The Node process rpcscope runs as (the script execs it: one pid), and its argv. */
  async function argvOf(env: Record<string, string>): Promise<string[]> {
    const sc = await startSidecarProcess(['--upstream', 'http://127.0.0.1:1', '--log-level', 'info'], env);
    try {
      return readFileSync(`/proc/${sc.proc.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } finally {
      await sc.stop();
    }
  }

  it('runs Node with a 4 MiB young generation semi-space, unless NODE_OPTIONS sets one, and no other Node option', async () => {
    const plain = await argvOf({});
    // Node options: before the bundle, not among rpcscope's own arguments.
    const bundle = plain.findIndex((a) => a.endsWith('dist/rpcscope.cjs'));
    assert.ok(bundle > 0, plain.join(' '));
    const nodeOptions = plain.slice(1, bundle);
    assert.deepEqual(nodeOptions, ['--max-semi-space-size=4'], plain.join(' '));
    const own = await argvOf({ NODE_OPTIONS: '--max-semi-space-size=2' });
    assert.ok(!own.some((a) => a.startsWith('--max-semi-space-size')), `NODE_OPTIONS's value stands alone: ${own.join(' ')}`);
    // Node reads NODE_OPTIONS itself: the command line is node and the bundle, nothing between.
    assert.ok(own[1]!.endsWith('dist/rpcscope.cjs'), own.join(' '));
  });

  it('starts on the Node it supports without a warning about its Node', async () => {
    const sc = await startSidecarProcess(['--upstream', 'http://127.0.0.1:1', '--log-level', 'info']);
    try {
      const lines = sc.log().split('\n').filter(Boolean);
      assert.ok(lines.some((l) => l.includes('rpcscope started')), sc.log());
      assert.ok(!lines.some((l) => l.includes('rpcscope supports Node')), sc.log());
    } finally {
      await sc.stop();
    }
  });
});
