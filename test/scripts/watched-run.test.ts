// scripts/watched-run.ts as `npm test` runs node:test with it: a test file whose
// process outlives its tests (a server left listening) ends the run once it has
// printed nothing for the time given, naming that file and failing; a file that
// closes what it opened ends by itself, and passes.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runWatched } from '../../scripts/watched-run.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('a node:test run watched for silence', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-watched-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, closes: boolean): string => {
    const path = join(dir, name);
    writeFileSync(
      path,
      `import net from 'node:net';\nimport { test } from 'node:test';\n` +
        `test('opens a server', async () => {\n  const s = net.createServer();\n  await new Promise((r) => s.listen(0, '127.0.0.1', r));\n  ${closes ? 's.close();' : ''}\n});\n`,
    );
    return path;
  };
  // A run of its own, not a child of this one's (node:test tells its children so in NODE_TEST_CONTEXT).
  const watched = (path: string) => runWatched(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', path], { cwd: root, silentMs: 3000, env: { NODE_TEST_CONTEXT: undefined } });

  it('ends a run whose test file outlives its tests, naming the file, and fails it', { timeout: 60_000 }, async () => {
    const leaky = file('leaves-a-server.test.ts', false);
    const started = Date.now();
    const r = await watched(leaky);
    assert.deepEqual(r.silentFiles, [leaky]);
    assert.notEqual(r.code, 0);
    assert.match(r.output, /^ok 1 - opens a server$/m, 'its test passed before the run was ended');
    assert.ok(Date.now() - started < 30_000, `ended after ${Date.now() - started} ms`);
  });

  it('lets a run whose files close what they open end by itself, and pass', { timeout: 60_000 }, async () => {
    const r = await watched(file('closes-its-server.test.ts', true));
    assert.equal(r.silentFiles, undefined);
    assert.equal(r.code, 0, r.output);
    assert.match(r.output, /^# pass 1$/m);
  });
});
