// The exporter's Prometheus text serializer, with each label set rendered once.
// Its own per-line work (sanitising every label name and escaping every value
// with regular expressions, for every bucket of every histogram) stalled the
// event loop for ~140 ms per scrape at 100 methods — a pause every proxied call
// would feel. rpcscope's cells keep one attributes object for their life, so the
// rendered `{k="v",...}` text is cached against that object and each line becomes
// a string concatenation. The output is byte for byte the exporter's (the golden
// exposition test holds it to that).
//
// This replaces two methods the exporter (exporter-prometheus 0.223.0, pinned)
// declares private; a version bump must be checked against the golden test.
import type { Attributes } from '@opentelemetry/api';
import { PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import type { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { DataPoint, Histogram } from '@opentelemetry/sdk-metrics';

/** Label names as the exporter sanitises them: invalid characters to `_`, runs of `_` to one. */
function labelName(key: string): string {
  return key.replace(/[^a-z0-9_]/gi, '_').replace(/_{2,}/g, '_');
}

/** Label values as the exporter escapes them. */
function labelValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? '');
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function valueString(value: number): string {
  return value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : `${value}`;
}

type Internals = {
  _serializeSingularDataPoint(name: string, data: unknown, dataPoint: DataPoint<number>, additional?: Attributes): string;
  _serializeHistogramDataPoint(name: string, data: unknown, dataPoint: DataPoint<Histogram>, additional?: Attributes): string;
};

export function installCachedLabelSerializer(exporter: PrometheusExporter): void {
  // Arguments as the exporter passes them for our options: no prefix, no timestamps, no
  // resource constant labels, target_info on, scope info off.
  const serializer = new PrometheusSerializer(undefined, false, undefined, false, true);
  const internals = serializer as unknown as Internals;
  const singular = internals._serializeSingularDataPoint.bind(serializer);
  const histogram = internals._serializeHistogramDataPoint.bind(serializer);
  const rendered = new WeakMap<Attributes, string>();
  const labels = (attributes: Attributes): string => {
    let text = rendered.get(attributes);
    if (text === undefined) {
      text = Object.entries(attributes)
        .map(([k, v]) => `${labelName(k)}="${labelValue(v)}"`)
        .join(',');
      rendered.set(attributes, text);
    }
    return text;
  };
  const noExtra = (a: Attributes | undefined): boolean => a === undefined || Object.keys(a).length === 0;

  internals._serializeSingularDataPoint = (name, data, dataPoint, additional) => {
    if (!noExtra(additional)) return singular(name, data, dataPoint, additional);
    const l = labels(dataPoint.attributes);
    return `${name}${l ? `{${l}}` : ''} ${valueString(dataPoint.value)}\n`;
  };
  internals._serializeHistogramDataPoint = (name, data, dataPoint, additional) => {
    if (!noExtra(additional)) return histogram(name, data, dataPoint, additional);
    const l = labels(dataPoint.attributes);
    const h = dataPoint.value;
    const braces = l ? `{${l}}` : '';
    const le = l ? `{${l},le="` : '{le="';
    let out = `${name}_count${braces} ${valueString(h.count)}\n`;
    if (h.sum !== undefined) out += `${name}_sum${braces} ${valueString(h.sum)}\n`;
    let cumulative = 0;
    const { counts, boundaries } = h.buckets;
    for (let i = 0; i < counts.length; i++) {
      cumulative += counts[i]!;
      const bound = boundaries[i];
      out += `${name}_bucket${le}${bound === undefined || bound === Infinity ? '+Inf' : String(bound)}"} ${cumulative}\n`;
      if (bound === Infinity) break;
    }
    return out;
  };
  (exporter as unknown as { _serializer: PrometheusSerializer })._serializer = serializer;
}
