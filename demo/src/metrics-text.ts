// The Prometheus text exposition as a test or the demo reads it: every sample with its
// labels, and sums over the ones that match, so assertions name series the way
// a PromQL selector would.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Label matchers: an exact value, or a predicate over the value. */
export type Matchers = Record<string, string | ((value: string) => boolean)>;

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;

/** Label pairs of `a="x",b="y\"z"`, with the format's three escapes undone. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  const pair = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y;
  let at = 0;
  while (at < text.length) {
    pair.lastIndex = at;
    const m = pair.exec(text);
    if (m === null) throw new Error(`unparsable labels in: ${line}`);
    labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    at = pair.lastIndex;
  }
  return labels;
}

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (m === null) throw new Error(`unparsable sample line: ${line}`);
    samples.push({ name: m[1]!, labels: parseLabels(m[2] ?? '', line), value: Number(m[3]) });
  }
  return samples;
}

function matches(s: Sample, name: string, where: Matchers): boolean {
  if (s.name !== name) return false;
  for (const [k, want] of Object.entries(where)) {
    const got = s.labels[k];
    if (got === undefined) return false;
    if (typeof want === 'string' ? got !== want : !want(got)) return false;
  }
  return true;
}

export function select(samples: readonly Sample[], name: string, where: Matchers = {}): Sample[] {
  return samples.filter((s) => matches(s, name, where));
}

/** `sum(name{where})`; 0 when nothing matches. */
export function sum(samples: readonly Sample[], name: string, where: Matchers = {}): number {
  return select(samples, name, where).reduce((acc, s) => acc + s.value, 0);
}

/** `sum by (labels) (name{where})`, keyed by the label values joined with ` | `. */
export function sumBy(samples: readonly Sample[], name: string, by: readonly string[], where: Matchers = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of select(samples, name, where)) {
    const key = by.map((l) => s.labels[l] ?? '').join(' | ');
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}
