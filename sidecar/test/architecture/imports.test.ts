// The shape of sidecar/src holds: no import closes a circle, and every import
// between folders points down the layers docs/architecture.md lists, but for the
// bends written below, each of which is still to go. A new circle or a new
// import up a layer fails here, naming the files; a bend that is gone fails too,
// so that its line is taken out and it cannot come back unseen.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** From the bottom: a module may import its own layer and the ones before it. */
const LAYERS: readonly (readonly string[])[] = [
  ['core', 'clock.ts', 'builtins.ts', 'version.ts', 'log.ts', 'source-stack.ts'],
  ['protocol'],
  ['h1', 'h2'],
  ['route'],
  ['config'],
  ['call'],
  ['observe'],
  ['upstream'],
  ['relay', 'relay-h1', 'relay-balanced'],
  ['proxy'],
  ['transcode'],
  ['listen'],
  ['admin'],
  ['cli', 'check.ts'],
  ['pipeline.ts'],
  ['main.ts'],
];

/** The two data planes: each takes the call and the upstream side from below, and neither imports the other. */
const APART: readonly (readonly string[])[] = [['relay', 'relay-h1', 'relay-balanced'], ['proxy', 'transcode']];

/** Imports up a layer that are known, each with why it is still there. */
const BENDS: ReadonlyMap<string, string> = new Map<string, string>([]);

/** Every .ts file under src, as a path relative to it. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [path.relative(SRC, full)] : [];
  });
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** file -> the files of src it imports (type-only imports too: they tie the files as much). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources()) {
    const text = readFileSync(path.join(SRC, file), 'utf8');
    const targets: string[] = [];
    for (const m of text.matchAll(IMPORT)) {
      const target = path.normalize(path.join(path.dirname(file), (m[1] ?? m[2])!));
      if (!target.startsWith('..')) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

function layerOf(file: string): number {
  const top = file.split(path.sep)[0]!;
  const i = LAYERS.findIndex((layer) => layer.includes(top));
  assert.notEqual(i, -1, `${file}: its folder is in no layer of LAYERS; add it where it belongs`);
  return i;
}

/** The circles of the graph: its strongly connected components of more than one file, or a file importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('the imports of sidecar/src', () => {
  const graph = importGraph();

  it('reads every file and the imports between them', () => {
    assert.ok(graph.size > 150, `${graph.size} files`);
    assert.ok(graph.get('pipeline.ts')!.includes(path.join('listen', 'listener.ts')), 'pipeline.ts imports the listener');
  });

  it('close no circle', () => {
    assert.deepEqual(circles(graph), []);
  });

  it('point down the layers, but for the bends listed', () => {
    const up: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) if (graph.has(target) && layerOf(target) > layerOf(file)) up.push(`${file} -> ${target}`);
    }
    assert.deepEqual(up.filter((edge) => !BENDS.has(edge)), [], 'imports up a layer: move the module down, or pass what it needs from below');
    assert.deepEqual([...BENDS.keys()].filter((edge) => !up.includes(edge)), [], 'bends that are gone: take them out of BENDS');
  });

  it('keep the relay and the terminating path apart', () => {
    const side = (file: string): number => APART.findIndex((folders) => folders.includes(file.split(path.sep)[0]!));
    const across: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) if (side(file) !== -1 && side(target) !== -1 && side(file) !== side(target)) across.push(`${file} -> ${target}`);
    }
    assert.deepEqual(across, [], 'the data planes meet only in pipeline.ts and listen/: move what both need down a layer');
  });

  it('finds a circle and an import up a layer when there is one', () => {
    assert.deepEqual(circles(new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['d.ts', ['a.ts']]])), [['a.ts', 'b.ts', 'c.ts']]);
    assert.ok(layerOf(path.join('protocol', 'detect.ts')) < layerOf(path.join('relay', 'relay-connection.ts')));
  });
});
