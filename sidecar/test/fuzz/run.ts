// Longer fuzzing runs that grow the kept corpus (see README.md):
//
//   node --import tsx sidecar/test/fuzz/run.ts --target hpack --seconds 600
//   node --import tsx sidecar/test/fuzz/run.ts --target all --seconds 120
//   node --import tsx sidecar/test/fuzz/run.ts --target hpack --repro <hex or file>
//   node --import tsx sidecar/test/fuzz/run.ts --target hpack --merge
//
// New inputs are written to corpus/<target>/ as they are found, and the directory
// is merged (cut to a subset of the same coverage) at the end. A finding is
// printed, written to the temporary directory, and exits 1.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { TARGETS, corpusDir, describeFinding, fuzz, inputName, loadTarget, mergeCorpus, type TargetName } from './engine.ts';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string' },
    repro: { type: 'string' },
    merge: { type: 'boolean', default: false },
    'no-save': { type: 'boolean', default: false },
  },
});

const names: TargetName[] = values.target === 'all' ? [...TARGETS] : TARGETS.filter((t) => t === values.target);
if (names.length === 0) {
  console.error(`usage: run.ts --target ${TARGETS.join('|')}|all [--seconds N] [--seed N] [--no-save] | --repro HEX|FILE | --merge`);
  process.exit(2);
}

if (values.repro !== undefined) {
  const input = existsSync(values.repro) ? readFileSync(values.repro) : Buffer.from(values.repro, 'hex');
  const target = await loadTarget(names[0]!);
  target.run(input);
  console.log(`${names[0]}: ${input.length} bytes ran without a finding`);
  process.exit(0);
}

for (const name of names) {
  const target = await loadTarget(name);
  const dir = corpusDir(name);
  if (!values.merge) {
    const seed = values.seed === undefined ? Date.now() >>> 0 : Number(values.seed);
    const r = fuzz(target, { seconds: Number(values.seconds), seed, corpusDir: dir, save: !values['no-save'], log: (line) => console.log(`${name} ${line}`) });
    console.log(`${name}: ${r.execs} execs in ${r.seconds.toFixed(1)} s (${Math.round(r.execs / r.seconds)}/s), ${r.features} features, corpus ${r.loaded} + ${r.added} new (seed ${seed})`);
    if (r.finding) {
      const file = join(tmpdir(), `rpcscope-fuzz-${name}-${inputName(r.finding.minimized)}`);
      writeFileSync(file, r.finding.minimized);
      console.error(`${describeFinding(name, seed, r.finding)}\nminimized input written to ${file}`);
      process.exit(1);
    }
    if (values['no-save']) continue;
  }
  const m = mergeCorpus(target, dir);
  console.log(`${name}: corpus merged from ${m.before} to ${m.after} inputs, ${m.bytes} bytes`);
}
