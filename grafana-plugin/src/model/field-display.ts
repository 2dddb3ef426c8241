import { FieldConfig, formattedValueToString, getActiveThreshold, getValueFormat, GrafanaTheme2 } from '@grafana/data';
import { MetricKey } from '../types';
import { formatValue, Units } from './format';
import { MetricKind } from './metric-catalog';
import { SeriesByRefId } from './series';

/**
 * The field config each metric's query carries, from its first series: Grafana applies the
 * panel's "Standard options" and per-query overrides to every field before the panel sees it,
 * so an override on refId p99 ("Fields returned by query") lands here.
 */
export function fieldConfigs(series: SeriesByRefId): Map<string, FieldConfig> {
  const out = new Map<string, FieldConfig>();
  for (const [refId, list] of series) {
    const config = list[0]?.config;
    if (config) {
      out.set(refId, config);
    }
  }
  return out;
}

/** Grafana's unit for a metric's base unit, used when only the decimals are set. */
function defaultUnit(kind: MetricKind, units: Units): string {
  switch (kind) {
    case 'latency':
      return 's';
    case 'rate':
    case 'per_second':
      return units.rateUnit === 'per_minute' ? 'reqpm' : 'reqps';
    case 'ratio':
      return 'percentunit';
    case 'bytes':
      return units.bytesUnit === 'si' ? 'decbytes' : 'bytes';
  }
}

/**
 * A value as the panel shows it: the panel's own format, unless the field config sets a unit or
 * decimals, which then win as in every other Grafana panel.
 */
export function displayValue(value: number | null, kind: MetricKind, units: Units, config: FieldConfig | undefined): string {
  if (value === null || !config || (!config.unit && config.decimals == null)) {
    return formatValue(value, kind, units);
  }
  const unit = config.unit || defaultUnit(kind, units);
  // The panel's own per-minute choice converts; a unit the user picks labels the value as it is.
  const shown = !config.unit && unit === 'reqpm' ? value * 60 : value;
  return formattedValueToString(getValueFormat(unit)(shown, config.decimals ?? undefined));
}

/**
 * The colour the field's thresholds give a value, or null while they are the default single
 * base step (the panel's own better/worse colours then speak alone).
 */
export function thresholdColor(value: number | null, config: FieldConfig | undefined, theme: GrafanaTheme2): string | null {
  const steps = config?.thresholds?.steps;
  if (value === null || !steps || steps.length < 2) {
    return null;
  }
  const mode = config?.color?.mode;
  if (mode && mode !== 'thresholds') {
    return null;
  }
  return theme.visualization.getColorByName(getActiveThreshold(value, steps).color);
}

export type MetricConfigs = Map<MetricKey | string, FieldConfig>;
