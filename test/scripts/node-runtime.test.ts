// The Node rpcscope runs on: one floor (Node 24) said the same way everywhere
// it is said, `npm test` running on it (started by an older Node, as on a
// machine whose own Node is 20, scripts/run.mjs runs itself again on the pinned
// Node 24), and a sidecar started on an older Node saying so.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { NODE_FLOOR as SIDECAR_FLOOR, nodeSupportWarning } from '../../sidecar/src/version.ts';
// @ts-expect-error: a plain JavaScript module (it runs before tsx is installed), without type declarations.
import { NODE_FLOOR, NODE_PINNED, pinnedNode, supportedNode } from '../../scripts/node-runtime.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

describe("rpcscope's Node", () => {
  it('is one floor, Node 24: the engines of the workspace and the sidecar, the run script, the sidecar and the images', () => {
    assert.equal(NODE_FLOOR, 24);
    for (const file of ['package.json', 'sidecar/package.json']) {
      assert.equal((JSON.parse(read(file)) as { engines: { node: string } }).engines.node, `>=${NODE_FLOOR}`, file);
    }
    assert.equal(SIDECAR_FLOOR, NODE_FLOOR);
    assert.equal(Number.parseInt(NODE_PINNED as string, 10), NODE_FLOOR);
    for (const file of ['deploy/docker/sidecar.Dockerfile', 'deploy/docker/demo.Dockerfile', 'deploy/docker/grafana.Dockerfile']) {
      assert.match(read(file), new RegExp(`ARG NODE_IMAGE=node:${(NODE_PINNED as string).replaceAll('.', '\\.')}-`), file);
    }
  });

  it('runs this suite: npm test on an older Node runs itself on the pinned Node', () => {
    assert.ok(supportedNode(), `the suite runs on Node ${process.versions.node}`);
    assert.ok(Number.parseInt(process.versions.node, 10) >= NODE_FLOOR);
  });

  it('tells a supported version from an older one', () => {
    assert.equal(supportedNode('20.20.2'), false);
    assert.equal(supportedNode('v22.15.0'), false);
    assert.equal(supportedNode('24.0.0'), true);
    assert.equal(supportedNode('v25.2.1'), true);
    assert.equal(supportedNode('not a version'), false);
  });

  it('fetches the pinned Node, which says its version', () => {
    const pinned = pinnedNode() as { bin: string } | { error: string };
    assert.ok('bin' in pinned, 'error' in pinned ? pinned.error : '');
    assert.equal(spawnSync(pinned.bin, ['--version'], { encoding: 'utf8' }).stdout.trim(), `v${NODE_PINNED as string}`);
  });

  it('has the sidecar warn at start on an older Node, naming both versions, and say nothing on a supported one', () => {
    const warning = nodeSupportWarning('20.20.2');
    assert.ok(warning !== undefined);
    assert.match(warning, /rpcscope supports Node 24 and later/);
    assert.match(warning, /this is Node 20\.20\.2/);
    assert.equal(nodeSupportWarning('v24.21.0'), undefined);
    assert.equal(nodeSupportWarning(process.versions.node), undefined);
  });

  it('has npm test name its commands before anything else, on any Node', () => {
    const r = spawnSync(process.execPath, [join(ROOT, 'scripts/run.mjs'), 'bogus'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /usage: node scripts\/run\.mjs demo\|test \(got "bogus"\)/);
  });
});
