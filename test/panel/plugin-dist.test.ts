// The panel plugin's dist/ as Grafana's catalogue takes it: besides module.js and
// plugin.json, the README, the CHANGELOG of the version it declares and the LICENSE; and
// the archive of it that `grafana cli --pluginUrl` and provisioning install.
// `npm test` builds dist/ and the archive before the node:test suites run.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { listZip, pluginZip, unpackIntoPluginsDir } from './plugin-zip.ts';

const PLUGIN = fileURLToPath(new URL('../../grafana-plugin', import.meta.url));
const DIST = join(PLUGIN, 'dist');
const LICENSE = fileURLToPath(new URL('../../LICENSE', import.meta.url));

function filesUnder(dir: string, root = dir, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) filesUnder(path, root, out);
    else out.push(relative(root, path));
  }
  return out.sort();
}

it('ships module.js, plugin.json, the README, the LICENSE and a CHANGELOG that lists its version', () => {
  assert.ok(existsSync(join(DIST, 'plugin.json')), 'grafana-plugin/dist is not built: node grafana-plugin/.config/build.mjs');
  for (const doc of ['README.md', 'CHANGELOG.md']) assert.equal(readFileSync(join(DIST, doc), 'utf8'), readFileSync(join(PLUGIN, doc), 'utf8'), `dist/${doc}`);
  assert.equal(readFileSync(join(DIST, 'LICENSE'), 'utf8'), readFileSync(LICENSE, 'utf8'), 'dist/LICENSE');
  assert.ok(existsSync(join(DIST, 'module.js')));
  const { version } = JSON.parse(readFileSync(join(DIST, 'plugin.json'), 'utf8')).info as { version: string };
  assert.match(readFileSync(join(DIST, 'CHANGELOG.md'), 'utf8'), new RegExp(`^## ${version.replaceAll('.', '\\.')} - \\d{4}-\\d{2}-\\d{2}$`, 'm'));
});

it('packs dist/ as <id>-<version>.zip: one folder named by the plugin id, readable files, unpacking to dist/ byte for byte', async () => {
  const zip = await pluginZip();
  assert.equal(zip.id, 'rpcscope-protocolcompare-panel');
  assert.ok(existsSync(zip.path), `${zip.path} is not built: node grafana-plugin/.config/build.mjs`);

  const entries = await listZip(zip.path);
  const tops = new Set(entries.map((e) => e.name.split('/')[0]));
  assert.deepEqual([...tops], [zip.id], 'every entry sits under the folder named by the plugin id');
  const names = entries.filter((e) => !e.isDir).map((e) => e.name.slice(zip.id.length + 1));
  for (const required of ['module.js', 'plugin.json', 'LICENSE', 'README.md', 'CHANGELOG.md', 'img/logo.svg']) {
    assert.ok(names.includes(required), `${required} is in the archive`);
  }
  // Grafana's installer creates each file with the mode the archive gives it.
  for (const e of entries) assert.equal(e.mode & 0o444, 0o444, `${e.name} is readable by all (mode ${e.mode.toString(8)})`);

  const unpacked = join(await unpackIntoPluginsDir(zip.path), zip.id);
  assert.deepEqual(filesUnder(unpacked), filesUnder(DIST));
  for (const file of filesUnder(DIST)) assert.ok(readFileSync(join(unpacked, file)).equals(readFileSync(join(DIST, file))), `${file} unpacks as dist/ holds it`);
});
