import { Delta, Thresholds } from './delta';

/**
 * How many thresholds a change spans, so that a p99 moving 60 % and an error ratio moving
 * 4 pp can be ranked on one scale: 60 % against a 10 % threshold is 6, 4 pp against a 0.5 pp
 * threshold is 8. A change from zero (no relative change exists) counts as just significant.
 * Zero for a change inside its threshold.
 */
export function significance(delta: Delta, t: Thresholds): number {
  if (delta.verdict === 'same') {
    return 0;
  }
  switch (delta.kind) {
    case 'relative':
      return t.relativeThreshold > 0 ? Math.abs(delta.value) / (t.relativeThreshold / 100) : Infinity;
    case 'points':
      return t.ratioThreshold > 0 ? (Math.abs(delta.value) * 100) / t.ratioThreshold : Infinity;
    case 'absolute':
      return 1;
  }
}
