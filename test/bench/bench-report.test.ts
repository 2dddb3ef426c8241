import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addedOverDirect, balancedCpuTable, balancedSkewTable, callsPerEndpoint, increasePercent, loadTable, lossPercent, median, pairedTable, ratio, rssTable, skew, summarize, summarizeBalanced, summarizePaired, type BalancedSample, type PairedWindow, type Phase, type Sample } from './bench-report.ts';
import { parseH2load, percentile } from './h2load.ts';
import { parseStraceSummary } from './syscalls.ts';

const phase = (cpuUsPerCall: number, p50Us: number, rps = 1000): Phase => ({ rps, ok: 100, failed: 0, p50Us, p99Us: p50Us * 2, cpuUsPerCall });
const sample = (target: string, round: number, cpu: number, p50: number, node = ''): Sample => ({
  workload: 'grpc-256',
  target,
  node,
  round,
  saturation: phase(cpu, p50),
  fixedRate: phase(cpu * 2, p50),
  spread: phase(cpu * 4, p50),
  serial: phase(cpu * 3, p50),
  syscallsPerCall: cpu / 2,
});

test('median takes the middle of odd counts, the mean of the two middles of even counts, and ignores NaN', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([NaN, 5]), 5);
  assert.ok(Number.isNaN(median([])));
});

test('skew is the busiest endpoint over the mean: 1 when even, the endpoint count when one took all, NaN with nothing to compare', () => {
  assert.equal(skew([100, 100, 100]), 1);
  assert.equal(skew([150, 75, 75]), 1.5);
  assert.equal(skew([300, 0, 0]), 3);
  assert.ok(Number.isNaN(skew([0, 0, 0])));
  assert.ok(Number.isNaN(skew([42])));
});

test('ratios and percentages are NaN where the base is missing or zero', () => {
  assert.equal(ratio(10, 40), 0.25);
  assert.ok(Number.isNaN(ratio(10, 0)));
  assert.ok(Number.isNaN(ratio(NaN, 1)));
  assert.equal(lossPercent(85, 100), 15.000000000000002);
  assert.equal(increasePercent(150, 100), 50);
});

test('summarize takes medians over rounds, subtracts the direct c=1 latency and divides by nginx in the same workload', () => {
  const samples = [
    sample('direct', 1, NaN, 500),
    sample('direct', 2, NaN, 700),
    sample('nginx', 1, 50, 660),
    sample('nginx', 2, 60, 700),
    sample('nginx', 3, 70, 1000),
    sample('rpcscope relay', 1, 10, 700, '20'),
    sample('rpcscope relay', 2, 14, 760, '20'),
  ];
  const rows = summarize(samples);
  const by = (t: string) => rows.find((r) => r.target === t)!;
  assert.equal(by('direct').addedP50Us, 0);
  assert.ok(Number.isNaN(by('direct').vsNginx.saturationCpu));
  assert.equal(by('nginx').saturationCpuUs, 60);
  assert.equal(by('nginx').addedP50Us, 100);
  assert.equal(by('rpcscope relay').saturationCpuUs, 12);
  assert.equal(by('rpcscope relay').vsNginx.saturationCpu, 0.2);
  assert.equal(by('rpcscope relay').vsNginx.fixedRateCpu, 0.2);
  assert.equal(by('rpcscope relay').spreadCpuUs, 48);
  assert.equal(by('rpcscope relay').vsNginx.spreadCpu, 0.2);
  assert.equal(by('rpcscope relay').syscallsPerCall, 6);
  assert.equal(by('rpcscope relay').vsNginx.syscalls, 0.2);
  assert.equal(by('rpcscope relay').addedP50Us, 130);
  assert.equal(by('rpcscope relay').vsNginx.addedP50, 1.3);
  assert.equal(by('rpcscope relay').node, '20');
});

test('the tables name Node rows by version and show a dash for what was not measured', () => {
  const rows = summarize([sample('direct', 1, NaN, 500), sample('nginx', 1, 50, 600), sample('rpcscope relay', 1, 10, 550, '24')]);
  const table = loadTable('gRPC unary', 2000, '4 conn., up to 10 calls each', rows).split('\n');
  assert.equal(
    table[2],
    '| | saturation calls/s | CPU µs/call | ×nginx | 2000/s (4 conn., up to 10 calls each): CPU µs/call | ×nginx | 2000/s over 8 conn., 1 call each: CPU µs/call | ×nginx | syscalls/call | ×nginx | c=1 p50 µs | added p50 µs | ×nginx | failed |',
  );
  assert.equal(table[4], '| direct | 1000 | – | – | – | – | – | – | – | – | 500 | 0 | – | 0 |');
  assert.equal(table[6], '| rpcscope relay (Node 24) | 1000 | 10.0 | 0.20× | 20.0 | 0.20× | 40.0 | 0.20× | 5.0 | 0.20× | 550 | 50 | 0.50× | 0 |');
  assert.equal(rssTable(1000, [{ target: 'nginx', node: '', idleMiB: 5.4, peakMiB: 16.6, failed: 0 }]).split('\n')[4], '| nginx | 5 | 17 | – | 0 |');
  assert.equal(rssTable(1000, [{ target: 'nginx', node: '', idleMiB: 5.4, peakMiB: 16.6, h1PeakMiB: 21.2, failed: 0 }]).split('\n')[4], '| nginx | 5 | 17 | 21 | 0 |');
});

/** A balanced sample: `bytes` per endpoint at every load, 300 calls per load, and one c=1 window, in the cycle numbered as the round. */
const balanced = (target: string, round: number, cpu: number, p50: number, bytes: number[]): BalancedSample => {
  const p = (c: number) => ({ ...phase(c, p50), ok: 300, endpointBytes: bytes });
  return { target, node: '', round, saturation: p(cpu), spread: p(cpu * 2), serial: [{ ...p(cpu * 3), cycle: round }] };
};

/** A balanced sample whose c=1 windows have these p50s, in cycles numbered from `first`. */
const windows = (target: string, round: number, first: number, p50s: number[]): BalancedSample => {
  const s = balanced(target, round, 10, 0, [100, 100, 100]);
  return { ...s, serial: p50s.map((p50, i) => ({ ...phase(30, p50), ok: 300, endpointBytes: [100, 100, 100], cycle: first + i })) };
};

test('callsPerEndpoint shares a load\'s calls out in proportion to the bytes each endpoint wrote', () => {
  assert.deepEqual(callsPerEndpoint({ ...phase(1, 1), ok: 300, failed: 0, endpointBytes: [200, 100, 0] }), [200, 100, 0]);
  assert.deepEqual(callsPerEndpoint({ ...phase(1, 1), ok: 90, failed: 0, endpointBytes: [300, 300, 300] }), [30, 30, 30]);
});

test('summarizeBalanced takes medians over rounds, the skew of each load, the split of the median round, and divides by nginx', () => {
  const rows = summarizeBalanced([
    balanced('direct', 1, NaN, 100, [900, 0, 0]),
    balanced('direct', 2, NaN, 100, [900, 0, 0]),
    balanced('direct', 3, NaN, 100, [900, 0, 0]),
    balanced('nginx', 1, 40, 150, [300, 300, 300]),
    balanced('rpcscope balanced relay', 1, 80, 200, [400, 300, 200]),
    balanced('rpcscope balanced relay', 2, 100, 220, [600, 200, 100]),
    balanced('rpcscope balanced relay', 3, 120, 240, [300, 300, 300]),
  ]);
  const by = (t: string) => rows.find((r) => r.target === t)!;
  assert.ok(Number.isNaN(by('direct').skew.saturation));
  assert.ok(Number.isNaN(by('direct').vsNginx.saturationCpu));
  assert.equal(by('nginx').skew.spread, 1);
  assert.equal(by('nginx').addedP50Us, 50);
  const relay = by('rpcscope balanced relay');
  assert.equal(relay.saturationCpuUs, 100);
  assert.equal(relay.vsNginx.saturationCpu, 2.5);
  assert.equal(relay.vsNginx.spreadCpu, 2.5);
  assert.equal(relay.addedP50Us, 120);
  assert.equal(relay.vsNginx.addedP50, 2.4);
  // Skews 4/3, 2 and 1: the median is 4/3, and the split is that round's.
  assert.equal(relay.skew.serial, 4 / 3);
  assert.deepEqual(relay.callsPerEndpoint.serial.map(Math.round), [133, 100, 67]);
  assert.equal(relay.bytesPerCall.saturation, 3);
});

test('at c=1 each window is read over the direct path of its own cycle, and set against nginx cycle by cycle', () => {
  // Cycle 2 ran slow for everyone (the direct path too); the relay's window of cycle 4 has no direct window and is left out.
  const rows = summarizeBalanced([
    windows('direct', 1, 1, [60, 90]),
    windows('direct', 2, 3, [62]),
    windows('nginx', 1, 1, [130, 160]),
    windows('nginx', 2, 3, [120]),
    windows('rpcscope balanced relay', 1, 1, [120, 150]),
    windows('rpcscope balanced relay', 2, 3, [125, 400]),
  ]);
  const by = (t: string) => rows.find((r) => r.target === t)!;
  // nginx adds 70, 70 and 58; the relay 60, 60 and 63.
  assert.equal(by('nginx').addedP50Us, 70);
  const relay = by('rpcscope balanced relay');
  assert.equal(relay.addedP50Us, 60);
  assert.equal(relay.vsNginx.addedP50, 60 / 70);
  assert.deepEqual(relay.serialAtOrUnder, { at: 2, of: 3 });
  assert.equal(relay.serialP50Us, 137.5);
  assert.deepEqual(by('nginx').serialAtOrUnder, { at: 0, of: 0 });
  assert.equal(by('direct').addedP50Us, 0);
  assert.match(balancedCpuTable('gRPC', 2000, rows).split('\n')[6]!, /\| 60 \| 0\.86× \| 2 of 3 \| 0 \|$/);
});

test('the balanced tables show CPU against nginx, and the skew and split of every proxy, leaving direct out of the skew', () => {
  const rows = summarizeBalanced([balanced('direct', 1, NaN, 100, [900, 0, 0]), balanced('nginx', 1, 40, 150, [450, 300, 150])]);
  const cpu = balancedCpuTable('gRPC', 2000, rows).split('\n');
  assert.equal(cpu[4], '| direct | 1000 | – | – | – | – | 100 | 0 | – | – | 0 |');
  assert.equal(cpu[5], '| nginx | 1000 | 40.0 | 1.00× | 80.0 | 1.00× | 150 | 50 | 1.00× | – | 0 |');
  const skews = balancedSkewTable(2000, rows).split('\n');
  assert.equal(skews.length, 5);
  assert.equal(skews[4], '| nginx | 1.500 | 150 / 100 / 50 | 1.500 | 150 / 100 / 50 | 1.500 | 150 / 100 / 50 |');
});

test('parseH2load reads the rate, the outcome and the latency percentiles of its log', () => {
  const stdout = 'finished in 1.02s, 19607.84 req/s, 5.21MB/s\nrequests: 200 total, 200 started, 200 done, 198 succeeded, 2 failed, 0 errored, 0 timeout\n';
  const log = Array.from({ length: 200 }, (_, i) => `1700000000000000\t200\t${200 - i}`).join('\n') + '\n';
  assert.deepEqual(parseH2load(stdout, log), { rps: 19607.84, ok: 198, failed: 2, p50Us: 100, p99Us: 198 });
  assert.equal(percentile([1, 2, 3, 4], 0.5), 2);
  assert.ok(Number.isNaN(percentile([], 0.5)));
});

test('parseStraceSummary reads the total and the most frequent calls of strace -c, with or without an errors column', () => {
  const summary = [
    '% time     seconds  usecs/call     calls    errors syscall',
    '------ ----------- ----------- --------- --------- ----------------',
    ' 61.20    0.012000           3      4000           writev',
    ' 30.00    0.006000           1      6000      2000 read',
    '  8.80    0.001700           2       850           epoll_wait',
    '------ ----------- ----------- --------- --------- ----------------',
    '100.00    0.019700           1     10850      2000 total',
  ].join('\n');
  assert.deepEqual(parseStraceSummary(summary), { total: 10850, top: [['read', 6000], ['writev', 4000], ['epoll_wait', 850]] });
  assert.equal(parseStraceSummary('strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n'), undefined);
});

test('paired windows read each proxy against nginx round by round: median, lowest, highest, rounds at or under 1x', () => {
  const win = (target: string, round: number, value: number, node = ''): PairedWindow => ({ target, node, round, value, failed: 0 });
  // nginx drifts from round to round; the relay follows it, so its own median says less than the ratios do.
  const windows = [win('nginx', 1, 100), win('relay', 1, 90, '20'), win('nginx', 2, 150), win('relay', 2, 165, '20'), win('nginx', 3, 120), win('relay', 3, 120, '20'), win('HAProxy', 1, 80), win('HAProxy', 3, 60)];
  const rows = summarizePaired(windows);
  const relay = rows.find((r) => r.target === 'relay')!;
  assert.deepEqual(relay.ratios, [0.9, 1.1, 1]);
  assert.equal(relay.ratio, 1);
  assert.equal(relay.lowest, 0.9);
  assert.equal(relay.highest, 1.1);
  assert.equal(relay.atOrUnder, 2);
  assert.equal(relay.value, 120);
  const ha = rows.find((r) => r.target === 'HAProxy')!;
  assert.deepEqual(ha.ratios, [0.8, 0.5], 'a proxy missing a round is read on the rounds it has');
  const nginxRow = rows.find((r) => r.target === 'nginx')!;
  assert.deepEqual(nginxRow.ratios, []);
  assert.ok(Number.isNaN(nginxRow.ratio));
  const table = pairedTable('t', 3, rows);
  assert.match(table, /\| relay \(Node 20\) \| 120\.0 \| 1\.00× \| 0\.90× – 1\.10× \| 2 of 3 \| 0 \|/);
  assert.match(table, /\| nginx \| 120\.0 \| 1\.00× \| – \| – \| 0 \|/);
});

test('paired c=1 windows read the latency each proxy adds over the direct path of the same round', () => {
  const win = (target: string, round: number, value: number, node = ''): PairedWindow => ({ target, node, round, value, failed: 0 });
  // Round 2 ran slow for everyone, the direct path too: read over its own direct window, the relay stays at nginx's added latency.
  const windows = [win('direct', 1, 150), win('nginx', 1, 250), win('relay', 1, 230, '20'), win('direct', 2, 300), win('nginx', 2, 420), win('relay', 2, 420, '20'), win('nginx', 3, 260), win('relay', 3, 900, '20')];
  const added = addedOverDirect(windows, 'direct');
  assert.deepEqual(
    added.map((w) => [w.target, w.round, w.value]),
    [
      ['nginx', 1, 100],
      ['relay', 1, 80],
      ['nginx', 2, 120],
      ['relay', 2, 120],
    ],
    'the direct windows are dropped, and so is a round without one',
  );
  const relay = summarizePaired(added).find((r) => r.target === 'relay')!;
  assert.deepEqual(relay.ratios, [0.8, 1]);
  assert.equal(relay.atOrUnder, 2);
  assert.match(pairedTable('t', 3, summarizePaired(added), 'added p50 µs'), /\| \| added p50 µs \(median\) \|/);
});
