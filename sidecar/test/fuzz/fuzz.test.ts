// Coverage-guided fuzzing, bounded for `npm test`: each target replays its kept
// corpus (corpus/<target>/), then mutates from it for a few seconds with a fixed
// seed, and fails with the input, cut down, and the stack of anything it finds.
// Longer runs that grow the corpus: run.ts (see README.md).
// RPCSCOPE_FUZZ_SECONDS sets the time per target.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TARGETS, corpusDir, describeFinding, fuzz, loadTarget } from './engine.ts';

const SECONDS = Number(process.env.RPCSCOPE_FUZZ_SECONDS ?? 8);

describe('fuzzing from the kept corpora', () => {
  TARGETS.forEach((name, i) => {
    it(`${name}: no finding in ${SECONDS} s`, async (t) => {
      const seed = 0x5eed + i;
      const target = await loadTarget(name);
      const r = fuzz(target, { seconds: SECONDS, seed, corpusDir: corpusDir(name), save: false });
      t.diagnostic(`${name}: ${r.execs} execs in ${r.seconds.toFixed(1)} s (${Math.round(r.execs / r.seconds)}/s), ${r.features} features, corpus ${r.loaded} + ${r.added} new`);
      if (r.finding) assert.fail(describeFinding(name, seed, r.finding));
    });
  });
});
