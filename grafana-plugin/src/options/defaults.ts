import { METRIC_KEYS } from '../model/metric-catalog';
import { PanelOptions } from '../types';

/**
 * Defaults that fit the queries in the README's contract (and the repo's dashboards): every
 * metric, REST as the baseline a migration starts from, ratios moving by half a point or
 * figures by 10 % counted as a change.
 */
export const DEFAULT_OPTIONS: PanelOptions = {
  mode: 'protocols',
  baseline: 'rest',
  metrics: [...METRIC_KEYS],
  reducer: 'mean',
  relativeThreshold: 10,
  ratioThreshold: 0.5,
  // A p99 from a few hundred calls rests on its top handful; below this a delta is mostly noise.
  minCalls: 500,
  // max / mean: 1 is even; 1.5 means the busiest pod takes half as much again as its fair share.
  skewThreshold: 1.5,
  podLabel: '',
  latencyUnit: 'auto',
  bytesUnit: 'iec',
  rateUnit: 'per_second',
  showSparklines: true,
  sortBy: 'change',
};

/** Saved panels may predate an option; anything missing takes its default. */
export function withDefaults(options: Partial<PanelOptions> | undefined): PanelOptions {
  const merged = { ...DEFAULT_OPTIONS };
  for (const [k, v] of Object.entries(options ?? {})) {
    if (v !== undefined && v !== null) {
      (merged as Record<string, unknown>)[k] = v;
    }
  }
  return merged;
}
