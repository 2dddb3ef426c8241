// A small coverage-guided fuzzer built on public Node APIs only. Jazzer.js was
// the first choice, but its npm package carries no C++ sources, only prebuilt
// addons, and the Linux one needs glibc 2.38 (Debian 12 has 2.36).
//
// Coverage is V8's precise block coverage through node:inspector: after each
// input the counts are taken (which also resets them), and an input that runs a
// block of sidecar/src not run before, or runs it a number of times in a new
// AFL bucket, joins the corpus. Mutations are AFL's havoc in miniature plus a
// dictionary of each target's protocol tokens. A finding is whatever a target's
// `run` throws: each target lets through only the errors its code documents
// for bad input, and asserts its invariants.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

export interface FuzzTarget {
  /** Runs one input. Throws only on a finding. */
  run(data: Buffer): void;
  /** Inputs to start from; kept when they add coverage to the corpus read from disk. */
  seeds: Buffer[];
  /** Tokens inserted whole: protocol magic that byte-level mutation rarely builds. */
  dictionary: Buffer[];
  maxLength: number;
}

export const TARGETS = ['frame-parser', 'hpack', 'http1-head', 'h1-message', 'grpc-framing', 'json-mapping'] as const;
export type TargetName = (typeof TARGETS)[number];

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** Only blocks of the code under test count as coverage, not the harness's or a library's. */
const SOURCE = new URL('../../src/', import.meta.url).href;

export function corpusDir(name: TargetName): string {
  return join(HERE, 'corpus', name);
}

interface RangeNode {
  startOffset: number;
  endOffset: number;
  count: number;
}
interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: { ranges: RangeNode[] }[];
}

class Coverage {
  private readonly session = new Session();
  /**
   * Block ranges seen so far, per function. V8 leaves a block out of its report
   * when it ran as often as the block around it, so a block has a range of its
   * own only once some input ran it a different number of times; from then on
   * its count is that of the innermost range reported around it.
   */
  private readonly known = new Map<string, { blocks: { start: number; end: number; id: number }[]; byOffsets: Set<number> }>();
  private nextId = 0;

  constructor() {
    // Optimized code stops counting calls of the functions it compiled (their
    // entry counts stay flat), so the interpreter and baseline code only.
    v8.setFlagsFromString('--no-turbofan');
    v8.setFlagsFromString('--no-maglev');
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  }

  /** A same-thread session answers before `post` returns. */
  private post(method: string, params: object = {}): unknown {
    let answer: unknown;
    let failure: Error | null = null;
    this.session.post(method, params, (err, result) => {
      failure = err;
      answer = result;
    });
    if (failure) throw failure;
    return answer;
  }

  /** The features run since the last take: block id × 8 + AFL bucket of its count. */
  take(): number[] {
    const { result } = this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] };
    const features: number[] = [];
    for (const script of result) {
      if (!script.url.startsWith(SOURCE)) continue;
      for (const { ranges } of script.functions) {
        const key = `${script.scriptId}:${ranges[0]!.startOffset}`;
        let known = this.known.get(key);
        if (!known) this.known.set(key, (known = { blocks: [], byOffsets: new Set() }));
        for (const r of ranges) {
          const offsets = r.startOffset * 2 ** 26 + r.endOffset;
          if (known.byOffsets.has(offsets)) continue;
          known.byOffsets.add(offsets);
          known.blocks.push({ start: r.startOffset, end: r.endOffset, id: this.nextId++ });
        }
        for (const b of known.blocks) {
          // Ranges come outermost first: the last one around a block is the innermost.
          let count = 0;
          for (const r of ranges) if (r.startOffset <= b.start && b.end <= r.endOffset) count = r.count;
          if (count > 0) features.push(b.id * 8 + bucket(count));
        }
      }
    }
    return features;
  }
}

function bucket(count: number): number {
  if (count <= 3) return count - 1;
  if (count < 8) return 3;
  if (count < 16) return 4;
  if (count < 32) return 5;
  return count < 128 ? 6 : 7;
}

let coverage: Coverage | undefined;

/** Loads a target once coverage is on: code compiled before it would be counted coarsely. */
export async function loadTarget(name: TargetName): Promise<FuzzTarget> {
  coverage ??= new Coverage();
  const mod = (await import(`./targets/${name}.ts`)) as { target: FuzzTarget };
  return mod.target;
}

/** mulberry32: a seeded generator, so that a run can be repeated exactly. */
class Rng {
  constructor(private state: number) {}
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  below(n: number): number {
    return n <= 0 ? 0 : this.next() % n;
  }
  pick<T>(list: readonly T[]): T {
    return list[this.below(list.length)]!;
  }
}

const INTERESTING = [0, 1, 2, 4, 5, 8, 0x7f, 0x80, 0xff, 0x100, 0x3fff, 0x4000, 0x4001, 0x7fff, 0x8000, 0xffff, 0x10000, 0xfffff, 0xffffff, 0x1000000, 0x7fffffff, 0x80000000, 0xffffffff];
const NUMBERS = ['0', '-0', '1', '-1', '0.5', '1e309', '-1e309', '1e-400', '2147483648', '-2147483649', '4294967296', '9007199254740993', '9223372036854775808', '-9223372036854775809', '18446744073709551616', '99999999', '253402300800', '-62135596801', '1.000000001', '0x10', '1_0', ' 1'];

/** One havoc step. Protocol fields here are big-endian (HTTP/2, HPACK, gRPC), so are the interesting values. */
function mutateOnce(d: Buffer, rng: Rng, corpus: readonly Buffer[], dictionary: readonly Buffer[]): Buffer {
  const at = (extra = 0): number => rng.below(d.length + extra);
  const insert = (i: number, part: Buffer): Buffer => Buffer.concat([d.subarray(0, i), part, d.subarray(i)]);
  const overwrite = (i: number, part: Buffer): Buffer => Buffer.concat([d.subarray(0, i), part, d.subarray(Math.min(d.length, i + part.length))]);
  const chunk = (from: Buffer): Buffer => {
    const start = rng.below(from.length);
    return from.subarray(start, start + 1 + rng.below(Math.min(64, from.length - start)));
  };
  switch (d.length === 0 ? 4 : rng.below(13)) {
    case 0: {
      const out = Buffer.from(d);
      out[at()]! ^= 1 << rng.below(8);
      return out;
    }
    case 1: {
      const out = Buffer.from(d);
      out[at()] = rng.below(256);
      return out;
    }
    case 2: {
      const out = Buffer.from(d);
      const i = at();
      out[i] = (out[i]! + rng.below(71) - 35) & 0xff;
      return out;
    }
    case 3: {
      const width = 1 + rng.below(4);
      const b = Buffer.alloc(width);
      b.writeUIntBE(rng.pick(INTERESTING) % 2 ** (8 * width), 0, width);
      return overwrite(at(), b);
    }
    case 4: {
      const n = 1 + rng.below(8);
      const b = rng.below(2) ? Buffer.alloc(n * 4, rng.below(256)) : Buffer.from(Array.from({ length: n }, () => rng.below(256)));
      return insert(at(1), b);
    }
    case 5: {
      const i = at();
      return Buffer.concat([d.subarray(0, i), d.subarray(i + 1 + rng.below(Math.min(32, d.length - i)))]);
    }
    case 6:
      return insert(at(1), Buffer.from(chunk(d)));
    case 7:
      return overwrite(at(), Buffer.from(chunk(d)));
    case 8:
      return dictionary.length ? insert(at(1), rng.pick(dictionary)) : d;
    case 9:
      return dictionary.length ? overwrite(at(), rng.pick(dictionary)) : d;
    case 10: {
      const other = corpus.length ? rng.pick(corpus) : d;
      if (other.length === 0) return d;
      // Half the time the tail of another input, else a piece of it inserted.
      return rng.below(2) ? Buffer.concat([d.subarray(0, at(1)), other.subarray(rng.below(other.length))]) : insert(at(1), Buffer.from(chunk(other)));
    }
    case 11: {
      // Targets keep their options in the leading bytes: worth more tries than any other byte.
      const out = Buffer.from(d);
      out[rng.below(Math.min(2, d.length))] = rng.below(256);
      return out;
    }
    default: {
      // A number in text (JSON, header values) swapped for an edge case.
      const digits = /[-0-9][0-9.eE+]*/g;
      const found = [...d.toString('latin1').matchAll(digits)];
      if (found.length === 0) return insert(at(1), Buffer.from(rng.pick(NUMBERS)));
      const m = rng.pick(found);
      return Buffer.concat([d.subarray(0, m.index), Buffer.from(rng.pick(NUMBERS)), d.subarray(m.index + m[0].length)]);
    }
  }
}

function mutate(input: Buffer, rng: Rng, corpus: readonly Buffer[], dictionary: readonly Buffer[], maxLength: number): Buffer {
  let d = input;
  for (let n = 1 << rng.below(5); n > 0; n--) d = mutateOnce(d, rng, corpus, dictionary);
  return d.length > maxLength ? d.subarray(0, maxLength) : d;
}

export function inputName(data: Buffer): string {
  return createHash('sha1').update(data).digest('hex').slice(0, 16);
}

function readCorpusDir(dir: string): Buffer[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  return names.filter((n) => !n.startsWith('.')).map((n) => readFileSync(join(dir, n)));
}

export interface Finding {
  input: Buffer;
  /** The input cut down to what still fails the same way. */
  minimized: Buffer;
  error: unknown;
}

export interface FuzzOptions {
  seconds: number;
  seed: number;
  corpusDir: string;
  /** Write inputs that add coverage into `corpusDir`. */
  save: boolean;
  /** An input slower than this is a finding (quadratic parsing and the like). */
  slowMs?: number;
  /** Progress lines, about every 10 s. */
  log?: (line: string) => void;
}

export interface FuzzResult {
  execs: number;
  seconds: number;
  /** Inputs read from disk, and those added this run. */
  loaded: number;
  added: number;
  features: number;
  finding?: Finding;
}

function failure(target: FuzzTarget, data: Buffer, slowMs: number): unknown {
  let fastest = Infinity;
  // A busy machine stalls a run now and then: slow only if it stays slow.
  for (let tries = 0; tries < 3 && fastest > slowMs; tries++) {
    const t0 = performance.now();
    try {
      target.run(data);
    } catch (err) {
      return err ?? new Error(`threw ${String(err)}`);
    }
    fastest = Math.min(fastest, performance.now() - t0);
  }
  return fastest > slowMs ? new Error(`slow input: ${fastest.toFixed(0)} ms for ${data.length} bytes`) : undefined;
}

/** Where a failure comes from: its kind, its message up to the first value in it, and the first frame of its stack. */
function signature(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (err.message.startsWith('slow input')) return 'slow';
  const gist = err.message.split('\n')[0]!.replace(/[\d"'].*$/, '');
  const frame = err.stack?.split('\n').find((l) => l.trimStart().startsWith('at ')) ?? '';
  return `${err.name} ${gist} ${frame.trim()}`;
}

/** Deletes pieces of a failing input, largest first, while it still fails the same way. */
function minimize(target: FuzzTarget, input: Buffer, err: unknown, slowMs: number): Buffer {
  const want = signature(err);
  // Each try of a slow input is slow too.
  if (want === 'slow') return input;
  let best = input;
  for (let size = best.length >> 1; size >= 1; size >>= 1) {
    for (let i = 0; i + size <= best.length; ) {
      const shorter = Buffer.concat([best.subarray(0, i), best.subarray(i + size)]);
      const e = failure(target, shorter, slowMs);
      if (e !== undefined && signature(e) === want) best = shorter;
      else i += size;
    }
  }
  return best;
}

export function fuzz(target: FuzzTarget, opts: FuzzOptions): FuzzResult {
  const cov = coverage!;
  const slowMs = opts.slowMs ?? 1000;
  const rng = new Rng(opts.seed);
  const seen = new Set<number>();
  const corpus = readCorpusDir(opts.corpusDir);
  const loaded = corpus.length;
  const started = performance.now();
  let execs = 0;
  let added = 0;
  /** Runs an input; its error, or whether it reached something new. */
  const exec = (data: Buffer): { error: unknown; fresh: boolean } => {
    execs++;
    const error = failure(target, data, slowMs);
    let fresh = false;
    for (const f of cov.take()) {
      if (seen.has(f)) continue;
      seen.add(f);
      fresh = true;
    }
    return { error, fresh };
  };
  const keep = (data: Buffer): void => {
    corpus.push(data);
    added++;
    if (!opts.save) return;
    mkdirSync(opts.corpusDir, { recursive: true });
    writeFileSync(join(opts.corpusDir, inputName(data)), data);
  };
  const found = (input: Buffer, error: unknown): FuzzResult => ({ execs, seconds: (performance.now() - started) / 1000, loaded, added, features: seen.size, finding: { input, error, minimized: minimize(target, input, error, slowMs) } });

  // The counts so far belong to loading, not to an input.
  cov.take();
  for (const data of corpus) {
    const { error } = exec(data);
    if (error !== undefined) return found(data, error);
  }
  const kept = new Set(corpus.map(inputName));
  for (const data of target.seeds) {
    const { error, fresh } = exec(data);
    if (error !== undefined) return found(data, error);
    if (fresh && !kept.has(inputName(data))) keep(data);
  }
  const deadline = started + opts.seconds * 1000;
  let report = started + 10_000;
  for (;;) {
    const now = performance.now();
    if (now >= deadline) break;
    if (opts.log && now >= report) {
      report = now + 10_000;
      opts.log(`#${execs} features: ${seen.size} corpus: ${corpus.length} exec/s: ${Math.round(execs / ((now - started) / 1000))}`);
    }
    const parent = corpus.length ? rng.pick(corpus) : Buffer.alloc(0);
    const child = mutate(parent, rng, corpus, target.dictionary, target.maxLength);
    const { error, fresh } = exec(child);
    if (error !== undefined) return found(child, error);
    if (fresh) keep(child);
  }
  return { execs, seconds: (performance.now() - started) / 1000, loaded, added, features: seen.size };
}

/**
 * Shrinks a corpus directory to a subset with the same coverage, as libFuzzer's
 * -merge does: inputs smallest first, each kept only when it adds a feature.
 * A first pass runs them all so that every block range is known to the second.
 */
export function mergeCorpus(target: FuzzTarget, dir: string): { before: number; after: number; bytes: number } {
  const cov = coverage!;
  const names = readdirSync(dir).filter((n) => !n.startsWith('.'));
  const inputs = names.map((name) => ({ name, data: readFileSync(join(dir, name)) })).sort((a, b) => a.data.length - b.data.length || a.name.localeCompare(b.name));
  const features = (data: Buffer): number[] => {
    try {
      target.run(data);
    } catch {
      // A failing input still has coverage; the fuzz run reports its failure.
    }
    return cov.take();
  };
  cov.take();
  for (const { data } of inputs) features(data);
  const seen = new Set<number>();
  let after = 0;
  let bytes = 0;
  for (const { name, data } of inputs) {
    let fresh = false;
    for (const f of features(data)) {
      if (seen.has(f)) continue;
      seen.add(f);
      fresh = true;
    }
    if (fresh) {
      after++;
      bytes += data.length;
    } else unlinkSync(join(dir, name));
  }
  return { before: inputs.length, after, bytes };
}

/** A finding as a report: the input in hex, cut down, and the stack. */
export function describeFinding(name: string, seed: number, f: Finding): string {
  const stack = f.error instanceof Error ? (f.error.stack ?? f.error.message) : String(f.error);
  return [
    `fuzz target ${name} (seed ${seed}) found a failure`,
    `input (${f.input.length} bytes, hex): ${f.input.toString('hex')}`,
    `minimized (${f.minimized.length} bytes, hex): ${f.minimized.toString('hex')}`,
    `reproduce: node --import tsx sidecar/test/fuzz/run.ts --target ${name} --repro ${f.minimized.toString('hex') || '""'}`,
    stack,
  ].join('\n');
}

/** `data` cut as a socket might deliver it, by a seed taken from the input: pieces of up to 2^(seed & 7) bytes. */
export function piecesOf(data: Buffer, seed: number): Buffer[] {
  const rng = new Rng(seed);
  const out: Buffer[] = [];
  for (let i = 0; i < data.length; ) {
    const n = 1 + rng.below(1 << (seed & 7));
    out.push(data.subarray(i, i + n));
    i += n;
  }
  return out;
}
