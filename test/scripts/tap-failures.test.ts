// scripts/tap-failures.ts reads a real node:test TAP report: each failed or
// cancelled test named after its suites, with where it is, why node:test says
// it failed and the assertion's message, one line each, as `npm test` prints
// them again before its summary (CI keeps only the last lines of a run).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { failureLine, tapFailures } from '../../scripts/tap-failures.ts';

const FILES: Record<string, string> = {
  'a.test.mjs': `import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
describe('skews', () => {
  it('passes', () => {});
  it('reads every service', () => { assert.deepEqual(['svc-3'], [], 'services without a skew'); });
});
it('top-level passes', () => {});
it('skipped one', { skip: true }, () => {});
`,
  'b.test.mjs': `import { describe, it, before } from 'node:test';
describe('soak', () => {
  before(() => { throw new Error("the upstream did not start within 30 s, it's gone"); });
  it('holds', () => {});
});
`,
  'c.test.mjs': `import { describe, it } from 'node:test';
describe('slow suite', { timeout: 300 }, () => {
  it('waits', () => new Promise((r) => setTimeout(r, 2000)));
});
`,
};

/** node:test run on the files above, its TAP report. */
function report(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-tap-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, name), text);
  // NODE_TEST_CONTEXT would make the run report to this test's runner rather than print its own report.
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', ...Object.keys(FILES)], { cwd: dir, encoding: 'utf8', env });
  assert.equal(r.status, 1, 'the run fails');
  return r.stdout;
}

describe('the failures of a TAP report', () => {
  const failures = tapFailures(report());

  it('names each failed test after its suite, with its file, line and the assertion message', () => {
    const f = failures.find((x) => x.name === 'skews › reads every service');
    assert.ok(f, JSON.stringify(failures.map((x) => x.name)));
    assert.equal(f.failureType, 'testCodeFailure');
    assert.match(f.location, /a\.test\.mjs:5:3$/);
    assert.match(f.error, /^services without a skew/);
  });

  it("names a suite whose hook failed, with the hook's error, and the tests it cancelled", () => {
    const hook = failures.find((x) => x.name === 'soak');
    assert.equal(hook?.failureType, 'hookFailed');
    assert.equal(hook?.error, "the upstream did not start within 30 s, it's gone");
    assert.equal(failures.find((x) => x.name === 'soak › holds')?.failureType, 'cancelledByParent');
  });

  it('names a suite that timed out', () => {
    assert.equal(failures.find((x) => x.name === 'slow suite')?.failureType, 'testTimeoutFailure');
    assert.equal(failures.find((x) => x.name === 'slow suite › waits')?.failureType, 'cancelledByParent');
  });

  it('leaves out what passed or was skipped', () => {
    const names = failures.map((x) => x.name);
    for (const ok of ['skews › passes', 'top-level passes', 'skipped one', 'soak']) assert.equal(names.includes(ok), ok === 'soak', ok);
  });

  it('prints a failure as one line no longer than asked', () => {
    const f = failures.find((x) => x.name === 'skews › reads every service')!;
    const line = failureLine(f, 80);
    assert.equal(line.length, 80);
    assert.ok(line.startsWith('✖ skews › reads every service ('), line);
    assert.ok(!line.includes('\n'));
    assert.ok(failureLine(f).includes('[testCodeFailure]: services without a skew'), failureLine(f));
  });
});
