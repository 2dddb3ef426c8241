// How long the frame-to-model transforms take on a large answer: 1,000 series of 720 points
// (12 h at a 1 min step) per query. Prints figures; it asserts nothing, since timings depend on
// the machine and its load. Run: pnpm --filter rpcscope-protocolcompare-panel bench
import './node-window';
import { DataFrame } from '@grafana/data';
import { promFrames } from '../test-support/prometheus-frames';
import { buildBeforeAfter } from '../src/model/before-after';
import { buildPods } from '../src/model/pods';
import { buildProtocolMatrix } from '../src/model/protocols';
import { readSeries } from '../src/model/series';
import { DEFAULT_OPTIONS } from '../src/options/defaults';
import { PROTOCOLS } from '../src/types';

const SERIES = 1000;
const POINTS = 720;
const STEP = 60;
const START = 1_700_000_000;

function wave(seed: number, base: number): number[] {
  return Array.from({ length: POINTS }, (_, i) => base * (1 + 0.3 * Math.sin((i + seed) / 40)));
}

/** SERIES series for one refId, labelled operation × protocol (250 operations × 4 protocols). */
function operationFrames(refId: string, base: number): DataFrame[] {
  return promFrames(
    refId,
    Array.from({ length: SERIES }, (_, i) => ({
      labels: { operation: `svc.Orders/Op${Math.floor(i / PROTOCOLS.length)}`, protocol: PROTOCOLS[i % PROTOCOLS.length]! },
      values: wave(i, base),
    })),
    START,
    STEP
  );
}

function time(name: string, run: () => unknown, rounds = 15): void {
  run();
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    run();
    ms.push(performance.now() - t0);
  }
  ms.sort((a, b) => a - b);
  const median = ms[Math.floor(ms.length / 2)]!;
  console.log(`${name.padEnd(58)} median ${median.toFixed(1).padStart(7)} ms   min ${ms[0]!.toFixed(1).padStart(7)} ms`);
}

const opts = { ...DEFAULT_OPTIONS, rangeSeconds: POINTS * STEP, maxColumns: 120 };

const p99 = operationFrames('p99', 0.05);
const allMetrics = DEFAULT_OPTIONS.metrics.flatMap((m) => operationFrames(m, 1));
const beforeAfter = [...operationFrames('p99', 0.05), ...operationFrames('p99_before', 0.08), ...operationFrames('rate', 10), ...operationFrames('rate_before', 10)];
const pods = promFrames(
  'rate',
  Array.from({ length: SERIES }, (_, i) => ({ labels: { pod: `orders-${i}` }, values: wave(i, i === 0 ? 50 : 5) })),
  START,
  STEP
);

console.log(`rpcscope panel transforms: ${SERIES} series x ${POINTS} points per query, Node ${process.version}`);
time('protocols: p99 (1,000 series)', () => buildProtocolMatrix(readSeries(p99), { ...opts, metrics: ['p99'] }));
time('protocols: all 9 metrics (9,000 series)', () => buildProtocolMatrix(readSeries(allMetrics), opts));
time('before/after: p99, rate and their _before (4,000 series)', () =>
  buildBeforeAfter(readSeries(beforeAfter), { ...opts, metrics: ['p99', 'rate'] })
);
time('pods: rate (1,000 pods, 120-column strip)', () => buildPods(readSeries(pods), opts));
