// The panel page's harness bundle (React, @grafana/data, @grafana/ui and the
// plugin loader) built once and kept: esbuild needs 15 s for it on an idle
// machine of two cores and a minute or more on a busy one, while its inputs
// only change with the lockfile or the harness sources. The key hashes those
// inputs, so a changed harness or dependency builds afresh.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleHarness, PLUGIN_DIR } from '../../test/panel/harness-server.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Ignored by git with the rest of node_modules, and cleared with it. */
export const HARNESS_CACHE_DIR = join(REPO, 'node_modules', '.cache', 'rpcscope-harness');

/** What the bundle is made of: the harness, the test support it imports, the build options, the locked dependencies. */
const INPUT_DIRS = [join(PLUGIN_DIR, 'harness'), join(PLUGIN_DIR, 'test-support')];
const INPUT_FILES = [join(REPO, 'pnpm-lock.yaml'), join(REPO, 'test', 'panel', 'harness-server.ts')];

async function inputKey(): Promise<string> {
  const hash = createHash('sha256');
  const files = [...INPUT_FILES];
  for (const dir of INPUT_DIRS) {
    for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) files.push(join(entry.parentPath, entry.name));
    }
  }
  for (const file of files.sort()) hash.update(file.slice(REPO.length)).update('\0').update(await readFile(file)).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** The bundle's text, from the cache when its inputs are unchanged; `building` is told before a build starts. */
export async function cachedHarnessBundle(building?: () => void): Promise<string> {
  const file = join(HARNESS_CACHE_DIR, `harness-${await inputKey()}.js`);
  const cached = await readFile(file, 'utf8').catch(() => undefined);
  if (cached !== undefined) return cached;
  building?.();
  const js = await bundleHarness();
  await mkdir(HARNESS_CACHE_DIR, { recursive: true });
  // Written aside and renamed, so a run stopped mid-write leaves no half bundle behind.
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, js);
  await rename(partial, file);
  return js;
}
