// Inputs kept for property tests: counterexamples fast-check found and edge cases
// worth trying every run, replayed before the random ones. One JSON file per
// parser in sidecar/test/fixtures/corpus/, each entry an input and why it is kept.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface CorpusEntry<T> {
  input: T;
  why: string;
}

export function readCorpus<T>(name: string): CorpusEntry<T>[] {
  return JSON.parse(readFileSync(fileURLToPath(new URL(`../fixtures/corpus/${name}.json`, import.meta.url)), 'utf8')) as CorpusEntry<T>[];
}

/** Cuts `bytes` at the given offsets (any order, any repeats): the pieces a socket might deliver. */
export function splitAt(bytes: Buffer, cuts: number[]): Buffer[] {
  const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const c of at) {
    pieces.push(bytes.subarray(from, c));
    from = c;
  }
  pieces.push(bytes.subarray(from));
  return pieces;
}
