// The failures of a node:test TAP report, a line each: what CI keeps of a run is
// its last lines, and the spec reporter's own account of a failure (name,
// assertion message) scrolls out of them behind the steps that run after it.
// `npm test` prints these lines again just before its summary.

/** One failed or cancelled test of a TAP report. */
export interface TapFailure {
  /** The test's name, after its parents' (`suite › test`). */
  name: string;
  /** `testCodeFailure`, `hookFailed`, `cancelledByParent`, …, as node:test says. */
  failureType: string;
  /** The error's first lines (the assertion's message, then its diff), joined by ' ⏎ '; '' when the report gives none. */
  error: string;
  /** Where the test is (`file:line:column`), as node:test says; '' when it does not. */
  location: string;
}

/** How many lines of an error the digest keeps. */
const ERROR_LINES = 3;

/** Every `not ok` of `tap` with its diagnostics; parents are named before their children. */
export function tapFailures(tap: string): TapFailure[] {
  const lines = tap.split('\n');
  const failures: TapFailure[] = [];
  /** The subtests seen at each depth of indentation, so that a `not ok` can name its parents. */
  const pending: { depth: number; name: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const subtest = /^( *)# Subtest: (.*)$/.exec(line);
    if (subtest) {
      const depth = subtest[1]!.length;
      while (pending.length > 0 && pending.at(-1)!.depth >= depth) pending.pop();
      pending.push({ depth, name: subtest[2]! });
      continue;
    }
    const result = /^( *)(not ok|ok) \d+ - (.*?)(?: # (?:SKIP|TODO).*)?$/.exec(line);
    if (!result) continue;
    const depth = result[1]!.length;
    // The result closes the subtest opened at its depth (and any left open deeper).
    while (pending.length > 0 && pending.at(-1)!.depth >= depth) pending.pop();
    if (result[2] === 'ok') continue;
    const parents = pending.map((p) => p.name);
    const diag = diagnostics(lines, i + 1, depth);
    failures.push({ name: [...parents, result[3]!].join(' › '), ...diag });
  }
  return failures;
}

/**
 * A scalar as node:test's TAP reporter writes it: in single quotes, or in double
 * quotes when it holds a single quote, or in backquotes when it holds both; or bare.
 */
function unquote(v: string): string {
  const q = v[0];
  if (v.length < 2 || (q !== "'" && q !== '"' && q !== '`') || v.at(-1) !== q) return v;
  return v.slice(1, -1);
}

/** The YAML block under a result line: its failureType, location and the error's first lines. */
function diagnostics(lines: string[], from: number, depth: number): Omit<TapFailure, 'name'> {
  const indent = ' '.repeat(depth + 2);
  const out = { failureType: '', error: '', location: '' };
  if (lines[from] !== `${indent}---`) return out;
  for (let j = from + 1; j < lines.length && lines[j] !== `${indent}...`; j++) {
    const l = lines[j]!;
    if (!l.startsWith(indent) || l[indent.length] === ' ') continue;
    const colon = l.indexOf(': ', indent.length);
    if (colon < 0) continue;
    const key = l.slice(indent.length, colon);
    const value = l.slice(colon + 2);
    if (key === 'failureType') out.failureType = unquote(value);
    else if (key === 'location') out.location = unquote(value);
    else if (key === 'error') {
      if (/^[|>][-+]?$/.test(value)) {
        // A block scalar: its first non-empty lines.
        const kept: string[] = [];
        for (let k = j + 1; k < lines.length && lines[k]!.startsWith(`${indent}  `) && kept.length < ERROR_LINES; k++) {
          const text = lines[k]!.trim();
          if (text) kept.push(text);
        }
        out.error = kept.join(' ⏎ ');
      } else out.error = unquote(value);
    }
  }
  return out;
}

/** A failure as one line of at most `width` characters. */
export function failureLine(f: TapFailure, width = 300): string {
  const line = `✖ ${f.name}${f.location ? ` (${f.location})` : ''}${f.failureType ? ` [${f.failureType}]` : ''}${f.error ? `: ${f.error}` : ''}`;
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}
