// The panel plugin's dist/ as Grafana's catalogue takes it: besides module.js and
// plugin.json, the README and the CHANGELOG of the version it declares.
// `npm test` builds dist/ before the node:test suites run.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const PLUGIN = fileURLToPath(new URL('../../grafana-plugin', import.meta.url));
const DIST = join(PLUGIN, 'dist');

it('ships module.js, plugin.json, the README and a CHANGELOG that lists its version', () => {
  assert.ok(existsSync(join(DIST, 'plugin.json')), 'grafana-plugin/dist is not built: node grafana-plugin/.config/build.mjs');
  for (const doc of ['README.md', 'CHANGELOG.md']) assert.equal(readFileSync(join(DIST, doc), 'utf8'), readFileSync(join(PLUGIN, doc), 'utf8'), `dist/${doc}`);
  assert.ok(existsSync(join(DIST, 'module.js')));
  const { version } = JSON.parse(readFileSync(join(DIST, 'plugin.json'), 'utf8')).info as { version: string };
  assert.match(readFileSync(join(DIST, 'CHANGELOG.md'), 'utf8'), new RegExp(`^## ${version.replaceAll('.', '\\.')} - \\d{4}-\\d{2}-\\d{2}$`, 'm'));
});
