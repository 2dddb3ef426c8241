// The Prometheus text exposition format (version 0.0.4), rendered from the
// sidecar's own metric cells.
//
// Why our own serializer rather than @opentelemetry/exporter-prometheus: that
// exporter sanitises every label name and escapes every value with regular
// expressions on every line of every scrape (~140 ms of blocked event loop at
// 100 methods), and the only way to avoid it was to replace private members of
// it. Here a cell's label text is rendered once, the first time it is scraped,
// and each line is a concatenation. The output keeps the exporter's layout
// (HELP, TYPE, then samples; histograms as _count, _sum, then cumulative
// _bucket lines), so the exposition did not change when the exporter left.
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format

/**
 * Label names: anything outside [a-zA-Z0-9_] becomes `_`, runs of `_` one
 * (OpenTelemetry's `service.name` is Prometheus's `service_name`).
 */
export function labelName(key: string): string {
  return key.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
}

/** Label values: backslash, double quote and line feed are escaped (format spec). */
export function labelValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** `k="v",k2="v2"` without braces; empty for no labels. */
export function labelText(labels: Readonly<Record<string, unknown>>): string {
  let text = '';
  for (const key in labels) text += `${text === '' ? '' : ','}${labelName(key)}="${labelValue(labels[key])}"`;
  return text;
}

/** HELP text: backslash and line feed are escaped (format spec). */
function helpText(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function sampleValue(value: number): string {
  return value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : `${value}`;
}

export function familyHeader(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): string {
  return `# HELP ${name} ${helpText(help)}\n# TYPE ${name} ${type}\n`;
}

/** One sample line; `labels` is pre-rendered label text. */
export function sampleLine(name: string, labels: string, value: number): string {
  return `${name}${labels === '' ? '' : `{${labels}}`} ${sampleValue(value)}\n`;
}

/** OpenTelemetry's `target_info` (the resource's attributes), as the OpenTelemetry-to-Prometheus mapping renders it. */
export function targetInfo(attributes: Readonly<Record<string, unknown>>, header: typeof familyHeader = familyHeader): string {
  return header('target_info', 'gauge', 'Target metadata') + sampleLine('target_info', labelText(attributes), 1);
}
