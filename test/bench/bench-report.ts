// The arithmetic and the tables of the benchmarks, apart from running them:
// medians of rounds, the latency a proxy adds over the direct path, ratios
// against nginx, how evenly a balancer spread calls over its endpoints, and
// the Markdown the results files and the terminal show.
import type { Load } from './h2load.ts';

export interface Phase extends Load {
  /** The proxy's CPU time per call, µs (NaN where no proxy process runs). */
  cpuUsPerCall: number;
}

/** One target under one workload in one round. */
export interface Sample {
  workload: string;
  target: string;
  /** The Node version for Node rows, '' for the others. */
  node: string;
  round: number;
  saturation: Phase;
  fixedRate: Phase;
  /** The same rate spread over 8 connections, one call at a time on each: a pod's everyday shape. */
  spread: Phase;
  serial: Phase;
  /** The proxy's system calls per call over a run of the spread shape (strace -c -f), NaN where not counted. */
  syscallsPerCall: number;
}

export interface Summary {
  workload: string;
  target: string;
  node: string;
  saturationRps: number;
  saturationCpuUs: number;
  saturationP50Us: number;
  saturationP99Us: number;
  fixedRateRps: number;
  fixedRateCpuUs: number;
  spreadCpuUs: number;
  syscallsPerCall: number;
  serialP50Us: number;
  /** c=1 median latency less the direct path's in the same workload. */
  addedP50Us: number;
  failed: number;
  /** This row's figure over nginx's in the same workload (NaN where either is missing). */
  vsNginx: { saturationCpu: number; fixedRateCpu: number; spreadCpu: number; syscalls: number; addedP50: number };
}

export function median(xs: readonly number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** a / b, or NaN when either is unknown or b is not positive. */
export function ratio(a: number, b: number): number {
  return Number.isNaN(a) || Number.isNaN(b) || b <= 0 ? NaN : a / b;
}

/** How much lower `value` is than `base`, in percent (throughput lost). */
export function lossPercent(value: number, base: number): number {
  return (1 - ratio(value, base)) * 100;
}

/** How much higher `value` is than `base`, in percent (latency added). */
export function increasePercent(value: number, base: number): number {
  return (ratio(value, base) - 1) * 100;
}

/**
 * How unevenly a balancer spread calls over its endpoints: the busiest
 * endpoint's share over the mean's, 1 for an even spread, the endpoint count
 * when one endpoint took every call; NaN with no calls or under two endpoints.
 */
export function skew(perEndpoint: readonly number[]): number {
  if (perEndpoint.length < 2) return NaN;
  const mean = perEndpoint.reduce((a, b) => a + b, 0) / perEndpoint.length;
  return ratio(Math.max(...perEndpoint), mean);
}

export const DIRECT = 'direct';
export const NGINX = 'nginx';

/** Medians over rounds per workload and target, with the added latency and the ratios against nginx. */
export function summarize(samples: readonly Sample[]): Summary[] {
  const keys = [...new Map(samples.map((s) => [`${s.workload}\0${s.target}\0${s.node}`, s])).values()];
  const base = keys.map((k) => {
    const rs = samples.filter((s) => s.workload === k.workload && s.target === k.target && s.node === k.node);
    const m = (f: (s: Sample) => number): number => median(rs.map(f));
    return {
      workload: k.workload,
      target: k.target,
      node: k.node,
      saturationRps: m((s) => s.saturation.rps),
      saturationCpuUs: m((s) => s.saturation.cpuUsPerCall),
      saturationP50Us: m((s) => s.saturation.p50Us),
      saturationP99Us: m((s) => s.saturation.p99Us),
      fixedRateRps: m((s) => s.fixedRate.rps),
      fixedRateCpuUs: m((s) => s.fixedRate.cpuUsPerCall),
      spreadCpuUs: m((s) => s.spread.cpuUsPerCall),
      syscallsPerCall: m((s) => s.syscallsPerCall),
      serialP50Us: m((s) => s.serial.p50Us),
      failed: rs.reduce((n, s) => n + s.saturation.failed + s.fixedRate.failed + s.spread.failed + s.serial.failed, 0),
    };
  });
  const directP50 = (w: string): number => base.find((b) => b.workload === w && b.target === DIRECT)?.serialP50Us ?? NaN;
  const withAdded = base.map((b) => ({ ...b, addedP50Us: b.target === DIRECT ? 0 : b.serialP50Us - directP50(b.workload) }));
  return withAdded.map((b) => {
    // The direct path is the baseline, not a proxy: it gets no ratio.
    const n = b.target === DIRECT ? undefined : withAdded.find((x) => x.workload === b.workload && x.target === NGINX);
    return {
      ...b,
      vsNginx: {
        saturationCpu: ratio(b.saturationCpuUs, n?.saturationCpuUs ?? NaN),
        fixedRateCpu: ratio(b.fixedRateCpuUs, n?.fixedRateCpuUs ?? NaN),
        spreadCpu: ratio(b.spreadCpuUs, n?.spreadCpuUs ?? NaN),
        syscalls: ratio(b.syscallsPerCall, n?.syscallsPerCall ?? NaN),
        addedP50: ratio(b.addedP50Us, n?.addedP50Us ?? NaN),
      },
    };
  });
}

const fixed = (digits: number) => (x: number): string => (Number.isFinite(x) ? x.toFixed(digits) : '–');
export const f0 = fixed(0);
export const f1 = fixed(1);
export const times = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '–');

export const rowName = (target: string, node: string): string => (node ? `${target} (Node ${node})` : target);

/**
 * One workload's Markdown table: saturation, the fixed rate (as `fixedShape`
 * spreads it), the same rate over 8 connections one call at a time, system
 * calls per call, and c=1, each against nginx.
 */
export function loadTable(title: string, rate: number, fixedShape: string, rows: readonly Summary[]): string {
  return [
    `#### ${title}`,
    '',
    `| | saturation calls/s | CPU µs/call | ×nginx | ${rate}/s (${fixedShape}): CPU µs/call | ×nginx | ${rate}/s over 8 conn., 1 call each: CPU µs/call | ×nginx | syscalls/call | ×nginx | c=1 p50 µs | added p50 µs | ×nginx | failed |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (s) =>
        `| ${rowName(s.target, s.node)} | ${f0(s.saturationRps)} | ${f1(s.saturationCpuUs)} | ${times(s.vsNginx.saturationCpu)} | ${f1(s.fixedRateCpuUs)} | ${times(s.vsNginx.fixedRateCpu)} | ${f1(s.spreadCpuUs)} | ${times(s.vsNginx.spreadCpu)} | ${f1(s.syscallsPerCall)} | ${times(s.vsNginx.syscalls)} | ${f0(s.serialP50Us)} | ${f0(s.addedP50Us)} | ${times(s.vsNginx.addedP50)} | ${s.failed} |`,
    ),
  ].join('\n');
}

export interface RssRow {
  target: string;
  node: string;
  /** Resident memory a second after start, before any call, MiB. */
  idleMiB: number;
  /** The highest resident memory after 1,000 streams were open at once, MiB. */
  peakMiB: number;
  /** The highest resident memory of a fresh start after 1,000 HTTP/1.1 connections carried calls at once, MiB. */
  h1PeakMiB?: number;
  failed: number;
}

export function rssTable(streams: number, rows: readonly RssRow[]): string {
  return [
    `#### Memory: idle, peak with ${streams} concurrent server streams, and peak with ${streams} HTTP/1.1 connections carrying calls at once`,
    '',
    `| | idle RSS MiB | peak RSS MiB, ${streams} streams | peak RSS MiB, ${streams} HTTP/1.1 calls | failed |`,
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${rowName(r.target, r.node)} | ${f0(r.idleMiB)} | ${f0(r.peakMiB)} | ${r.h1PeakMiB === undefined ? '–' : f0(r.h1PeakMiB)} | ${r.failed} |`),
  ].join('\n');
}

/** One load of the balanced benchmark on one peer: a Phase and what each endpoint wrote meanwhile. */
export interface BalancedPhase extends Phase {
  /** Bytes each endpoint wrote during the load (wchar of /proc/<pid>/io), in endpoint order. */
  endpointBytes: number[];
}

/** The balanced benchmark's loads: saturation, the rate over 8 connections one call at a time, c=1. */
export const BALANCED_LOADS = ['saturation', 'spread', 'serial'] as const;
export type BalancedLoad = (typeof BALANCED_LOADS)[number];

/**
 * One c=1 window of the balanced benchmark: every peer (the direct path among
 * them) takes one window in each cycle, one after another, so a cycle's windows
 * are seconds apart and what a proxy adds is read over the direct path's p50 of
 * its own cycle.
 */
export interface SerialWindow extends BalancedPhase {
  /** The cycle the window belongs to, numbered across the run. */
  cycle: number;
}

/** One peer in one round of the balanced benchmark. */
export interface BalancedSample {
  target: string;
  node: string;
  round: number;
  saturation: BalancedPhase;
  spread: BalancedPhase;
  /** The round's c=1 windows, one a cycle. */
  serial: SerialWindow[];
}

export interface BalancedSummary {
  target: string;
  node: string;
  saturationRps: number;
  saturationCpuUs: number;
  spreadRps: number;
  spreadCpuUs: number;
  /** Median of the c=1 windows' p50s. */
  serialP50Us: number;
  /** The latency the proxy adds at c=1: the median over its windows of the window's p50 less the direct path's p50 of the same cycle (one endpoint, no proxy). */
  addedP50Us: number;
  /** The cycles whose added p50 was at or under nginx's of the same cycle, of the cycles both were measured in (0 of 0 for direct and nginx; summarizePaired). */
  serialAtOrUnder: { at: number; of: number };
  failed: number;
  vsNginx: { saturationCpu: number; spreadCpu: number; addedP50: number };
  /** Per load, what the endpoints wrote per call all together: the answer plus the proxy's connections' own frames (median over rounds, or c=1 windows). */
  bytesPerCall: Record<BalancedLoad, number>;
  /** Per load, the median skew over rounds, or c=1 windows (NaN for direct, which has one endpoint). */
  skew: Record<BalancedLoad, number>;
  /** Per load, the calls per endpoint of the round (or c=1 window) whose skew is the median (the lower middle for an even count). */
  callsPerEndpoint: Record<BalancedLoad, number[]>;
}

const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

/** A load's calls shared out over the endpoints in proportion to the bytes each wrote. */
export function callsPerEndpoint(p: BalancedPhase): number[] {
  const total = sum(p.endpointBytes);
  return p.endpointBytes.map((b) => (total > 0 ? ((p.ok + p.failed) * b) / total : NaN));
}

/** A sample's measured phases of load `l`: one a round, or the round's c=1 windows. */
function phasesOf(s: BalancedSample, l: BalancedLoad): readonly BalancedPhase[] {
  return l === 'serial' ? s.serial : [s[l]];
}

/**
 * Medians over rounds per peer, ratios against nginx, and each load's skew. At
 * c=1 the figures are the windows': each window's added latency is its p50 less
 * the direct path's p50 in the same cycle, so seconds when the whole machine ran
 * slow move the base with the proxy rather than land on one proxy's figure.
 */
export function summarizeBalanced(samples: readonly BalancedSample[]): BalancedSummary[] {
  const keys = [...new Map(samples.map((s) => [`${s.target}\0${s.node}`, s])).values()];
  const perLoad = <T>(f: (l: BalancedLoad) => T): Record<BalancedLoad, T> => Object.fromEntries(BALANCED_LOADS.map((l) => [l, f(l)])) as Record<BalancedLoad, T>;
  // The c=1 windows read as paired-rate.ts reads its rounds: each cycle's windows taken close together.
  const windows: PairedWindow[] = samples.flatMap((s) => s.serial.map((w) => ({ target: s.target, node: s.node, round: w.cycle, value: w.p50Us, failed: w.failed })));
  const serial = summarizePaired(addedOverDirect(windows, DIRECT));
  const base = keys.map((k) => {
    const rs = samples.filter((s) => s.target === k.target && s.node === k.node);
    const phases = (l: BalancedLoad): BalancedPhase[] => rs.flatMap((s) => phasesOf(s, l));
    const m = (l: BalancedLoad, f: (p: BalancedPhase) => number): number => median(phases(l).map(f));
    const medianPhase = (l: BalancedLoad): BalancedPhase => {
      const bySkew = phases(l).sort((a, b) => skew(a.endpointBytes) - skew(b.endpointBytes));
      return bySkew[Math.floor((bySkew.length - 1) / 2)]!;
    };
    const added = serial.find((r) => r.target === k.target && r.node === k.node);
    return {
      target: k.target,
      node: k.node,
      saturationRps: m('saturation', (p) => p.rps),
      saturationCpuUs: m('saturation', (p) => p.cpuUsPerCall),
      spreadRps: m('spread', (p) => p.rps),
      spreadCpuUs: m('spread', (p) => p.cpuUsPerCall),
      serialP50Us: m('serial', (p) => p.p50Us),
      addedP50Us: k.target === DIRECT ? 0 : (added?.value ?? NaN),
      serialAtOrUnder: { at: added?.atOrUnder ?? 0, of: added?.ratios.length ?? 0 },
      failed: sum(BALANCED_LOADS.map((l) => sum(phases(l).map((p) => p.failed)))),
      bytesPerCall: perLoad((l) => m(l, (p) => sum(p.endpointBytes) / (p.ok + p.failed))),
      skew: perLoad((l) => (k.target === DIRECT ? NaN : m(l, (p) => skew(p.endpointBytes)))),
      callsPerEndpoint: perLoad((l) => callsPerEndpoint(medianPhase(l))),
    };
  });
  const n = base.find((x) => x.target === NGINX);
  return base.map((b) => {
    // The direct path is the baseline, not a proxy: it gets no ratio.
    const vs = (x: number, base: number | undefined): number => (b.target === DIRECT ? NaN : ratio(x, base ?? NaN));
    return { ...b, vsNginx: { saturationCpu: vs(b.saturationCpuUs, n?.saturationCpuUs), spreadCpu: vs(b.spreadCpuUs, n?.spreadCpuUs), addedP50: vs(b.addedP50Us, n?.addedP50Us) } };
  });
}

/** The balanced benchmark's CPU and latency table: saturation, `rate` over 8 connections one call each, and c=1, each against nginx. */
export function balancedCpuTable(title: string, rate: number, rows: readonly BalancedSummary[]): string {
  return [
    `#### ${title}`,
    '',
    `| | saturation calls/s | CPU µs/call | ×nginx | ${rate}/s over 8 conn., 1 call each: CPU µs/call | ×nginx | c=1 p50 µs | added p50 µs | ×nginx | c=1 cycles at or under nginx | failed |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (s) =>
        `| ${rowName(s.target, s.node)} | ${f0(s.saturationRps)} | ${f1(s.saturationCpuUs)} | ${times(s.vsNginx.saturationCpu)} | ${f1(s.spreadCpuUs)} | ${times(s.vsNginx.spreadCpu)} | ${f0(s.serialP50Us)} | ${f0(s.addedP50Us)} | ${times(s.vsNginx.addedP50)} | ${s.serialAtOrUnder.of > 0 ? `${s.serialAtOrUnder.at} of ${s.serialAtOrUnder.of}` : '–'} | ${s.failed} |`,
    ),
  ].join('\n');
}

/** Each proxy's skew and calls per endpoint at every load; the direct row, with one endpoint, is left out. */
export function balancedSkewTable(rate: number, rows: readonly BalancedSummary[]): string {
  const split = (calls: readonly number[]): string => (calls.every(Number.isFinite) ? calls.map(f0).join(' / ') : '–');
  const cells = (s: BalancedSummary, l: BalancedLoad): string => `${Number.isFinite(s.skew[l]) ? s.skew[l].toFixed(3) : '–'} | ${split(s.callsPerEndpoint[l])}`;
  return [
    '#### Skew across the endpoints (max/mean of calls per endpoint; 1 is even, the endpoint count is one endpoint taking all)',
    '',
    `| | saturation: skew | calls per endpoint | ${rate}/s over 8 conn.: skew | calls per endpoint | c=1: skew | calls per endpoint |`,
    '|---|---|---|---|---|---|---|',
    ...rows.filter((s) => s.target !== DIRECT).map((s) => `| ${rowName(s.target, s.node)} | ${BALANCED_LOADS.map((l) => cells(s, l)).join(' | ')} |`),
  ].join('\n');
}

/** One window of the paired fixed-rate benchmark (paired-rate.ts): a peer's CPU per call in round `round`. */
export interface PairedWindow {
  target: string;
  node: string;
  round: number;
  /** The window's figure: CPU µs a call at the fixed rate, or the p50 (then the added p50) at c=1. */
  value: number;
  failed: number;
}

export interface PairedSummary {
  target: string;
  node: string;
  /** Median over rounds of the peer's figure. */
  value: number;
  /** Each round's figure over nginx's figure of the same round. */
  ratios: number[];
  /** Median, lowest and highest of `ratios` (NaN for nginx itself, or without nginx). */
  ratio: number;
  lowest: number;
  highest: number;
  /** Rounds whose ratio is at or under 1. */
  atOrUnder: number;
  failed: number;
}

/** Per peer, its median figure and its ratios to nginx round by round (each round's windows taken close together). */
export function summarizePaired(windows: readonly PairedWindow[]): PairedSummary[] {
  const keys = [...new Map(windows.map((w) => [`${w.target}\0${w.node}`, w])).values()];
  const nginxOf = new Map(windows.filter((w) => w.target === NGINX).map((w) => [w.round, w.value]));
  return keys.map((k) => {
    const ws = windows.filter((w) => w.target === k.target && w.node === k.node);
    const ratios = k.target === NGINX ? [] : ws.map((w) => ratio(w.value, nginxOf.get(w.round) ?? NaN)).filter(Number.isFinite);
    return {
      target: k.target,
      node: k.node,
      value: median(ws.map((w) => w.value)),
      ratios,
      ratio: median(ratios),
      lowest: ratios.length ? Math.min(...ratios) : NaN,
      highest: ratios.length ? Math.max(...ratios) : NaN,
      atOrUnder: ratios.filter((r) => r <= 1).length,
      failed: sum(ws.map((w) => w.failed)),
    };
  });
}

/**
 * c=1 windows as the latency each proxy adds: each proxy's p50 less the p50 of
 * the direct path (`direct`, the client straight to an endpoint) in the same
 * round, so that a round the whole machine ran slow moves both. A round without
 * a direct window is dropped; the direct windows themselves are not returned.
 */
export function addedOverDirect(windows: readonly PairedWindow[], direct: string): PairedWindow[] {
  const directOf = new Map(windows.filter((w) => w.target === direct).map((w) => [w.round, w.value]));
  return windows.filter((w) => w.target !== direct && directOf.has(w.round)).map((w) => ({ ...w, value: w.value - directOf.get(w.round)! }));
}

/** The paired benchmark's table: each peer's figure (`figure` names it), and the ratio to nginx read round by round. */
export function pairedTable(title: string, rounds: number, rows: readonly PairedSummary[], figure = 'CPU µs/call'): string {
  return [
    `#### ${title}`,
    '',
    `| | ${figure} (median) | ×nginx, median of the rounds | lowest – highest | rounds at or under 1× | failed |`,
    '|---|---|---|---|---|---|',
    ...rows.map((s) =>
      s.target === NGINX
        ? `| ${rowName(s.target, s.node)} | ${f1(s.value)} | 1.00× | – | – | ${s.failed} |`
        : `| ${rowName(s.target, s.node)} | ${f1(s.value)} | ${times(s.ratio)} | ${times(s.lowest)} – ${times(s.highest)} | ${s.atOrUnder} of ${s.ratios.length || rounds} | ${s.failed} |`,
    ),
  ].join('\n');
}
