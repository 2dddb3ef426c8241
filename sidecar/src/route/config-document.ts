// Reading the files routing is configured from. Every failure names the file,
// so that a bad start says which of several configured files to fix.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

export function readText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${file}: cannot read it: ${(e as Error).message}`, { cause: e });
  }
}

/** A YAML (or JSON, which is YAML) document. */
export function readDocument(file: string): unknown {
  const text = readText(file);
  try {
    return parse(text);
  } catch (e) {
    throw new Error(`${file}: not valid YAML or JSON: ${(e as Error).message}`, { cause: e });
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
