// The panel's archive (grafana-plugin/artifacts/<id>-<version>.zip, written by the plugin's
// build) unpacked as Grafana's installer lays it out: into a plugins directory, where its
// top-level folder becomes public/plugins/<that folder>/. Python's zipfile reads it, a reader
// that shares nothing with the plugin's own zip writer.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PLUGIN_DIR } from './harness-server.ts';

const PYTHON = process.env.RPCSCOPE_PYTHON_GRPCIO ?? '/usr/bin/python3';

export interface PluginZip {
  id: string;
  version: string;
  /** The archive's path. */
  path: string;
}

/** The archive the last build wrote, named by dist/plugin.json's id and version. */
export async function pluginZip(): Promise<PluginZip> {
  const { id, info } = JSON.parse(await readFile(join(PLUGIN_DIR, 'dist', 'plugin.json'), 'utf8')) as { id: string; info: { version: string } };
  return { id, version: info.version, path: join(PLUGIN_DIR, 'artifacts', `${id}-${info.version}.zip`) };
}

export interface ZipEntry {
  name: string;
  /** The Unix mode from the entry's external attributes, as Grafana's installer applies it. */
  mode: number;
  isDir: boolean;
}

const LIST = `import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    bad = z.testzip()
    if bad is not None:
        sys.exit('corrupt entry: ' + bad)
    print(json.dumps([{'name': i.filename, 'mode': i.external_attr >> 16, 'isDir': i.is_dir()} for i in z.infolist()]))`;

/** The archive's entries, after checking every entry's CRC. */
export async function listZip(path: string): Promise<ZipEntry[]> {
  const { stdout } = await promisify(execFile)(PYTHON, ['-c', LIST, path]);
  return JSON.parse(stdout) as ZipEntry[];
}

/** Unpacks the archive into a new plugins directory and returns that directory. */
export async function unpackIntoPluginsDir(path: string): Promise<string> {
  const plugins = join(await mkdtemp(join(tmpdir(), 'rpcscope-grafana-')), 'plugins');
  await promisify(execFile)(PYTHON, ['-m', 'zipfile', '-e', path, plugins]);
  return plugins;
}
