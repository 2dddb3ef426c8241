// The OpenMetrics 1.0 text exposition, served when the scraper asks for it
// (Prometheus does once configured for it, or with exemplar storage on): the
// same cells and label text as the Prometheus text format, with the few lines
// that differ rendered here.
// https://github.com/prometheus/docs/blob/main/docs/specs/om/open_metrics_spec.md
//
// Where the two formats differ, as far as the sidecar's families go:
// | Prometheus 0.0.4                       | OpenMetrics 1.0                                   | spec section        |
// |----------------------------------------|---------------------------------------------------|---------------------|
// | `# HELP x_total …` / `# TYPE x_total`  | `# TYPE x counter` / `# HELP x …`, samples x_total | Counter             |
// | HELP escapes `\` and line feed         | HELP escapes `"` too                              | Escaping            |
// | no unit                                | `# UNIT x seconds` when the name ends in the unit | MetricFamily metadata |
// | no exemplars                           | ` # {trace_id="…",span_id="…"} 0.0123 1700000000.123` after a bucket | Exemplars |
// | ends after the last sample             | ends with `# EOF`                                 | Overall Structure   |
//
// `le` values keep the Prometheus rendering (`le="1"`, not the canonical `"1.0"`):
// parsers must accept them, and Prometheus before 3.0 keeps `le` as an opaque
// string, so a bucket series would otherwise change identity with the format.

/** The media type, https://github.com/prometheus/docs/blob/main/docs/specs/om/open_metrics_spec.md#overall-structure */
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

export const OPENMETRICS_EOF = '# EOF\n';

/** Whether an Accept header names OpenMetrics text at a non-zero quality. */
export function acceptsOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('application/openmetrics-text')) return false;
  for (const range of accept.split(',')) {
    if (!range.trimStart().startsWith('application/openmetrics-text')) continue;
    const q = /;\s*q=([0-9.]+)/.exec(range);
    if (q === null || Number(q[1]) > 0) return true;
  }
  return false;
}

/** Base units the sidecar's names end in (OpenMetrics "Units and Base Units"). */
const UNITS = ['seconds', 'bytes', 'ratio'];

/** `# TYPE`, `# UNIT` when the name ends in a base unit, `# HELP`; a counter's family name is its samples' less `_total`. */
export function openMetricsHeader(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): string {
  const family = type === 'counter' && name.endsWith('_total') ? name.slice(0, -'_total'.length) : name;
  const unit = UNITS.find((u) => family.endsWith(`_${u}`));
  return `# TYPE ${family} ${type}\n${unit === undefined ? '' : `# UNIT ${family} ${unit}\n`}# HELP ${family} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}\n`;
}

/** A counter's sample name: the family name with `_total`, which the sidecar's counters already carry. */
export function counterSampleName(name: string): string {
  return name.endsWith('_total') ? name : `${name}_total`;
}

/**
 * ` # {trace_id="…",span_id="…"} value timestamp`, appended to a bucket line
 * before its line feed. The label set stays far below the spec's 128 characters
 * (32 + 16 hex digits and the two names). The timestamp is Unix seconds.
 */
export function exemplarSuffix(traceId: string, spanId: string, value: number, unixMs: number): string {
  return ` # {trace_id="${traceId}",span_id="${spanId}"} ${value} ${(unixMs / 1000).toFixed(3)}`;
}
