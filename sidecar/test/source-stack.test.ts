// The built sidecar runs without --enable-source-maps and maps the stacks it
// logs itself: a bundle built the way sidecar/build.mjs builds one must log
// frames naming the TypeScript file and line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const FIXTURE = fileURLToPath(new URL('./fixtures/stack/throws.ts', import.meta.url));
const SOURCE_STACK = fileURLToPath(new URL('../src/source-stack.ts', import.meta.url));

describe('stack traces of the built sidecar', () => {
  let dir: string;
  let bundle: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rpcscope-stack-'));
    bundle = join(dir, 'throws.cjs');
    await build({ entryPoints: [FIXTURE], outfile: bundle, bundle: true, platform: 'node', format: 'cjs', sourcemap: 'linked', minifyWhitespace: true, logLevel: 'error' });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  function run(...flags: string[]): { raw: string; mapped: string } {
    const r = spawnSync(process.execPath, [...flags, bundle], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout) as { raw: string; mapped: string };
  }

  it('names the TypeScript file, line and column of each frame inside the bundle', () => {
    const { raw, mapped } = run();
    assert.match(raw, /throws\.cjs:1:\d+/, 'the raw frames point into the one-line bundle');
    const lines = mapped.split('\n');
    assert.equal(lines[0], 'Error: fixture failure');
    assert.match(lines[1] ?? '', new RegExp(`at fail \\(${FIXTURE.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}:6:9\\)$`));
    assert.ok(lines.some((l) => l.includes(`${FIXTURE}:10:`)), mapped);
    assert.doesNotMatch(mapped, /throws\.cjs/);
  });

  it('leaves the stack alone when Node maps it already (--enable-source-maps)', () => {
    const { raw, mapped } = run('--enable-source-maps');
    assert.equal(mapped, raw);
    assert.match(raw, /throws\.ts:6:/);
  });

  it('leaves frames outside the bundle and stacks without a map as they are', async () => {
    const { sourceStack } = await import(SOURCE_STACK);
    const stack = 'Error: x\n    at f (/elsewhere/app.js:1:10)\n    at node:internal/timers:1:2';
    assert.equal(sourceStack(stack, join(dir, 'missing.cjs')), stack);
    assert.equal(sourceStack(stack, bundle), stack);
  });
});
