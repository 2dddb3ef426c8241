// Properties of the relay's HPACK decoder: header blocks written by an encoder
// (every representation, dynamic table references, size updates) decode to the
// fields written and leave the table a plain model of RFC 7541 §4 holds; junk ends
// in an HpackError, never in any other exception.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { HpackDecoder, HpackError } from '../../src/relay/hpack-decoder.ts';
import { STATIC_LENGTH, STATIC_TABLE } from '../../src/relay/hpack-static-table.ts';
import { readCorpus } from '../support/corpus.ts';

/** RFC 7541 §5.1. */
function int(value: number, prefix: number, mask: number): number[] {
  const max = (1 << prefix) - 1;
  if (value < max) return [mask | value];
  const out = [mask | max];
  let v = value - max;
  while (v >= 128) {
    out.push((v % 128) + 128);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
const str = (s: string): number[] => [...int(s.length, 7, 0), ...Buffer.from(s, 'latin1')];

type Op =
  | { kind: 'static'; index: number }
  | { kind: 'dynamic'; pick: number }
  | { kind: 'incremental'; name: string; value: string }
  | { kind: 'plain'; nameIndex: number; value: string; never: boolean }
  | { kind: 'resize'; size: number };

/** The table as RFC 7541 §4 describes it: newest first, each entry costing 32 more than its octets. */
class Model {
  entries: [string, string][] = [];
  max = 4096;
  private get size(): number {
    return this.entries.reduce((n, [a, b]) => n + a.length + b.length + 32, 0);
  }
  add(name: string, value: string): void {
    this.entries.unshift([name, value]);
    while (this.size > this.max) this.entries.pop();
  }
  resize(size: number): void {
    this.max = size;
    while (this.size > this.max) this.entries.pop();
  }
}

/** Writes a block, and the fields a decoder must read from it, with the model following along. */
function encode(ops: Op[], model: Model): { block: Buffer; fields: string[]; never: number[] } {
  const bytes: number[] = [];
  const fields: string[] = [];
  /** The never-indexed fields' positions (0 for the first field). */
  const never: number[] = [];
  for (const op of ops) {
    switch (op.kind) {
      case 'resize':
        // Only at the start of a block (§4.2).
        if (bytes.length > 0) continue;
        bytes.push(...int(op.size, 5, 0x20));
        model.resize(op.size);
        break;
      case 'static':
        bytes.push(...int(op.index, 7, 0x80));
        fields.push(...STATIC_TABLE[op.index]!);
        break;
      case 'dynamic': {
        if (model.entries.length === 0) continue;
        const d = op.pick % model.entries.length;
        bytes.push(...int(STATIC_LENGTH + 1 + d, 7, 0x80));
        fields.push(...model.entries[d]!);
        break;
      }
      case 'incremental':
        bytes.push(0x40, ...str(op.name), ...str(op.value));
        fields.push(op.name, op.value);
        model.add(op.name, op.value);
        break;
      case 'plain':
        if (op.never) never.push(fields.length / 2);
        bytes.push(...int(op.nameIndex, 4, op.never ? 0x10 : 0x00), ...str(op.value));
        fields.push(STATIC_TABLE[op.nameIndex]![0], op.value);
        break;
    }
  }
  return { block: Buffer.from(bytes), fields, never };
}

const text = fc.string({ maxLength: 40, unit: fc.integer({ min: 0, max: 255 }).map((c) => String.fromCharCode(c)) });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.integer({ min: 1, max: STATIC_LENGTH }).map((index) => ({ kind: 'static' as const, index })),
  fc.nat().map((pick) => ({ kind: 'dynamic' as const, pick })),
  fc.tuple(text, text).map(([name, value]) => ({ kind: 'incremental' as const, name, value })),
  fc.tuple(fc.integer({ min: 1, max: STATIC_LENGTH }), text, fc.boolean()).map(([nameIndex, value, never]) => ({ kind: 'plain' as const, nameIndex, value, never })),
  fc.integer({ min: 0, max: 4096 }).map((size) => ({ kind: 'resize' as const, size })),
);

describe('HpackDecoder properties', () => {
  it('reads blocks as written, and keeps the dynamic table RFC 7541 §4 describes, across blocks', () => {
    fc.assert(
      fc.property(fc.array(fc.array(op, { maxLength: 12 }), { maxLength: 6 }), (blocks) => {
        const decoder = new HpackDecoder();
        const model = new Model();
        for (const ops of blocks) {
          const { block, fields } = encode(ops, model);
          assert.deepEqual([...decoder.decode(block)], fields);
          assert.deepEqual(decoder.entries(), model.entries);
        }
      }),
    );
  });

  it('reads a block sent again against the table as it stands then, whatever came between', () => {
    // A few blocks sent over and over, as a connection's calls send them: repeats of the
    // same octets with the table unchanged between (a decoder may know them by their
    // octets), and with it changed (an insertion, a size update) by another block.
    // Blocks that only read the table (indexed fields, literals without indexing) beside
    // blocks that change it, with short names and values so that entries differ yet fit.
    const short = fc.string({ maxLength: 3, unit: fc.constantFrom('a', 'b', '\x80') });
    const reads = fc.array(
      fc.oneof(
        fc.integer({ min: 1, max: STATIC_LENGTH }).map((index): Op => ({ kind: 'static', index })),
        fc.nat({ max: 3 }).map((pick): Op => ({ kind: 'dynamic', pick })),
        fc.tuple(fc.integer({ min: 1, max: STATIC_LENGTH }), short, fc.boolean()).map(([nameIndex, value, never]): Op => ({ kind: 'plain', nameIndex, value, never })),
      ),
      { minLength: 1, maxLength: 4 },
    );
    const changes = fc.array(
      fc.oneof(
        fc.tuple(short, short).map(([name, value]): Op => ({ kind: 'incremental', name, value })),
        fc.integer({ min: 0, max: 160 }).map((size): Op => ({ kind: 'resize', size })),
      ),
      { minLength: 1, maxLength: 2 },
    );
    const pool = fc.tuple(fc.array(reads, { minLength: 1, maxLength: 3 }), fc.array(changes, { minLength: 1, maxLength: 3 })).map(([r, c]) => [...r, ...c]);
    fc.assert(
      fc.property(pool, fc.array(fc.nat(), { minLength: 1, maxLength: 30 }), (pool, picks) => {
        const decoder = new HpackDecoder();
        const model = new Model();
        // What each block number stood for: a caller reads a list once per number (HpackDecoder.repeat).
        const numbered = new Map<number, string[]>();
        for (const pick of picks) {
          const { block, fields, never } = encode(pool[pick % pool.length]!, model);
          assert.deepEqual([...decoder.decode(block)], fields);
          if (decoder.repeat !== 0) {
            const before = numbered.get(decoder.repeat);
            if (before) assert.deepEqual(fields, before, 'a block number stands for one list only');
            else numbered.set(decoder.repeat, fields);
          }
          assert.deepEqual(decoder.neverIndexed, never);
          assert.equal(decoder.listSize, fields.reduce((n, f, i) => n + f.length + (i % 2 === 0 ? 32 : 0), 0));
          assert.deepEqual(decoder.entries(), model.entries);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('throws only HpackError on junk, and decodes junk the same every time', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 60 }), { maxLength: 4 }), (blocks) => {
        const run = (): string[] => {
          const decoder = new HpackDecoder();
          return blocks.map((b) => {
            try {
              return JSON.stringify([...decoder.decode(b)]);
            } catch (err) {
              if (!(err instanceof HpackError)) throw err;
              return `HpackError ${err.message}`;
            }
          });
        };
        assert.deepEqual(run(), run());
      }),
    );
  });

  it('replays its corpus', () => {
    for (const { input, why } of readCorpus<{ blocks: string[]; fields: string[] | null }>('hpack')) {
      const decoder = new HpackDecoder();
      let got: string[] | null = null;
      try {
        for (const hex of input.blocks) got = [...decoder.decode(Buffer.from(hex, 'hex'))];
      } catch (err) {
        if (!(err instanceof HpackError)) throw err;
        got = null;
      }
      assert.deepEqual(got, input.fields, why);
    }
  });
});
