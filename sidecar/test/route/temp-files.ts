// Bad configuration files, written per test so that each error case sits next to its assertion.
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after } from 'node:test';

const dir = mkdtempSync(join(tmpdir(), 'rpcscope-route-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Writes `text` at `name` under a per-run temporary directory and returns its path. */
export function tempFile(name: string, text: string): string {
  const file = join(dir, name);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}
