import { formattedValueToString, getValueFormat } from '@grafana/data';
import { BytesUnit, LatencyUnit, RateUnit } from '../types';
import { Delta } from './delta';
import { MetricKind } from './metric-catalog';

export interface Units {
  latencyUnit: LatencyUnit;
  bytesUnit: BytesUnit;
  rateUnit: RateUnit;
}

/** Typographic minus: "−38 %" reads as a number, "-38 %" as a dash. */
const MINUS = '\u2212';

const withSign = (text: string, negative: boolean) => (negative ? `${MINUS}${text}` : `+${text}`);

/** Three significant digits, without trailing zeros: 0.0123 → "0.0123", 123.4 → "123". */
function significant(v: number): string {
  if (v === 0) {
    return '0';
  }
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(v))));
  return String(Number(v.toFixed(Math.min(digits, 6))));
}

const grafana = (unit: string, v: number, decimals?: number) => formattedValueToString(getValueFormat(unit)(v, decimals));

/** Counts per time: plain below a thousand ("0.5", "42.5"), Grafana's K/M scaling above. */
const count = (v: number) => (Math.abs(v) < 1000 ? significant(v) : grafana('short', v));

/** A value in the contract's base unit (seconds, bytes, per second, ratio) as the user reads it. */
export function formatValue(value: number | null, kind: MetricKind, units: Units): string {
  if (value === null) {
    return '–';
  }
  switch (kind) {
    case 'latency':
      if (units.latencyUnit === 'ms') {
        return `${significant(value * 1000)} ms`;
      }
      if (units.latencyUnit === 's') {
        return `${significant(value)} s`;
      }
      // Three significant digits in the unit that suits the size; Grafana's 's' format varies
      // its decimals ("62 ms" next to "100.0 ms"), which misaligns a column.
      if (Math.abs(value) < 0.001 && value !== 0) {
        return `${significant(value * 1e6)} µs`;
      }
      if (Math.abs(value) < 1) {
        return `${significant(value * 1000)} ms`;
      }
      if (Math.abs(value) < 60) {
        return `${significant(value)} s`;
      }
      return grafana('s', value);
    case 'rate':
    case 'per_second':
      return units.rateUnit === 'per_minute' ? `${count(value * 60)}/min` : `${count(value)}/s`;
    case 'ratio':
      return grafana('percentunit', value, value !== 0 && Math.abs(value) < 0.001 ? 3 : 2);
    case 'bytes':
      return grafana(units.bytesUnit === 'si' ? 'decbytes' : 'bytes', value, 1);
  }
}

/** "−38 %", "+0.40 pp", or for a zero reference the plain difference ("+12/s"). */
export function formatDelta(delta: Delta, kind: MetricKind, units: Units): string {
  const negative = delta.value < 0;
  const abs = Math.abs(delta.value);
  switch (delta.kind) {
    case 'relative': {
      const pct = abs * 100;
      const text = pct >= 10 ? String(Math.round(pct)) : pct.toFixed(1);
      // A change too small to show keeps no sign: "−0.0 %" would read as a change.
      return Number(text) === 0 ? '0 %' : withSign(`${text} %`, negative);
    }
    case 'points': {
      const pp = abs * 100;
      const text = pp >= 10 ? pp.toFixed(1) : pp.toFixed(2);
      return Number(text) === 0 ? '0 pp' : withSign(`${text} pp`, negative);
    }
    case 'absolute':
      return withSign(formatValue(abs, kind, units), negative);
  }
}
