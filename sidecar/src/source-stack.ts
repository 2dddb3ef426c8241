// Stack traces in TypeScript terms, paid for only when one is written.
//
// The built sidecar (dist/rpcscope.cjs) carries a source map. Node's
// --enable-source-maps would parse it at start and hold it for the life of
// the process (about 6 MB of resident memory on Node 24, for frames nobody
// reads until something goes wrong). Instead the map is read the first time a
// stack is logged (a contained internal error, a crash) and each frame inside
// the bundle is rewritten to its TypeScript file, line and column, through
// node:module's public SourceMap.
import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The bundle's own path when running as the built sidecar; undefined under tsx, where stacks already name .ts files. */
const BUNDLE = typeof __filename === 'string' && __filename.endsWith('.cjs') ? __filename : undefined;

/** `path:line:column` inside a stack frame, with or without the surrounding parentheses. */
const FRAME = /((?:file:\/\/)?\/[^\s():]+):(\d+):(\d+)/g;

/** The map last read, and whose it is. */
let cached: { bundle: string; map: SourceMap | null } | undefined;

function loadMap(bundle: string): SourceMap | null {
  try {
    return new SourceMap(JSON.parse(readFileSync(`${bundle}.map`, 'utf8')));
  } catch {
    // No map beside the bundle (removed from an image): frames stay as they are.
    return null;
  }
}

/**
 * The stack with its bundle frames mapped to the sources, e.g.
 * `at Faults.internalError (/app/sidecar/src/call/faults.ts:61:7)`.
 * Unchanged under tsx, under --enable-source-maps, or without a map.
 */
export function sourceStack(stack: string | undefined, bundle: string | undefined = BUNDLE): string | undefined {
  if (stack === undefined || bundle === undefined || process.sourceMapsEnabled) return stack;
  if (cached?.bundle !== bundle) cached = { bundle, map: loadMap(bundle) };
  const sm = cached.map;
  if (sm === null) return stack;
  const base = pathToFileURL(bundle);
  return stack.replace(FRAME, (whole, file: string, line: string, column: string) => {
    if ((file.startsWith('file://') ? fileURLToPath(file) : file) !== bundle) return whole;
    const entry = sm.findEntry(Number(line) - 1, Number(column) - 1);
    if (!('originalSource' in entry) || !entry.originalSource) return whole;
    const source = entry.originalSource.startsWith('file://') ? fileURLToPath(entry.originalSource) : fileURLToPath(new URL(entry.originalSource, base));
    return `${source}:${entry.originalLine + 1}:${entry.originalColumn + 1}`;
  });
}
