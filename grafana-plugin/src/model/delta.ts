import { MetricDef } from './metric-catalog';

export type Verdict = 'better' | 'worse' | 'same' | 'neutral';

/**
 * A change from a reference value. `relative` is a fraction (−0.38 = −38 %); `points` is a
 * difference of two ratios (0.004 = +0.4 percentage points); `absolute` is a difference in the
 * metric's own unit, used when the reference is zero and a relative change has no meaning.
 */
export interface Delta {
  kind: 'relative' | 'points' | 'absolute';
  value: number;
  verdict: Verdict;
}

export interface Thresholds {
  /** Percent: a relative change below this is "same". */
  relativeThreshold: number;
  /** Percentage points: a ratio moving less than this is "same". */
  ratioThreshold: number;
}

function verdictOf(change: number, significant: boolean, def: MetricDef): Verdict {
  if (change === 0 || !significant) {
    return 'same';
  }
  if (def.better === 'none') {
    return 'neutral';
  }
  const lower = change < 0;
  return lower === (def.better === 'lower') ? 'better' : 'worse';
}

export function compare(value: number, reference: number, def: MetricDef, t: Thresholds): Delta {
  if (def.kind === 'ratio') {
    const d = value - reference;
    return { kind: 'points', value: d, verdict: verdictOf(d, Math.abs(d) * 100 >= t.ratioThreshold, def) };
  }
  if (reference === 0) {
    const d = value - reference;
    return { kind: d === 0 ? 'relative' : 'absolute', value: d, verdict: verdictOf(d, true, def) };
  }
  const r = (value - reference) / Math.abs(reference);
  return { kind: 'relative', value: r, verdict: verdictOf(r, Math.abs(r) * 100 >= t.relativeThreshold, def) };
}
