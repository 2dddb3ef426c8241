// The Prometheus protobuf exposition as a scraper reads it: the fields of
// client_model's io/prometheus/client/metrics.proto that rpcscope writes, for
// tests that decode a /metrics body (and the simulated fleet, which serves one).
import protobuf from 'protobufjs';

export const PROTOBUF_ACCEPT = 'application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2';

const root = protobuf.Root.fromJSON({
  nested: {
    LabelPair: { fields: { name: { type: 'string', id: 1 }, value: { type: 'string', id: 2 } } },
    Gauge: { fields: { value: { type: 'double', id: 1 } } },
    Counter: { fields: { value: { type: 'double', id: 1 } } },
    Bucket: { fields: { cumulativeCount: { type: 'uint64', id: 1 }, upperBound: { type: 'double', id: 2 } } },
    BucketSpan: { fields: { offset: { type: 'sint32', id: 1 }, length: { type: 'uint32', id: 2 } } },
    Histogram: {
      fields: {
        sampleCount: { type: 'uint64', id: 1 },
        sampleSum: { type: 'double', id: 2 },
        bucket: { rule: 'repeated', type: 'Bucket', id: 3 },
        schema: { type: 'sint32', id: 5 },
        zeroThreshold: { type: 'double', id: 6 },
        zeroCount: { type: 'uint64', id: 7 },
        positiveSpan: { rule: 'repeated', type: 'BucketSpan', id: 12 },
        positiveDelta: { rule: 'repeated', type: 'sint64', id: 13 },
      },
    },
    Metric: { fields: { label: { rule: 'repeated', type: 'LabelPair', id: 1 }, gauge: { type: 'Gauge', id: 2 }, counter: { type: 'Counter', id: 3 }, histogram: { type: 'Histogram', id: 7 }, timestampMs: { type: 'int64', id: 6 } } },
    MetricFamily: { fields: { name: { type: 'string', id: 1 }, help: { type: 'string', id: 2 }, type: { type: 'int32', id: 3 }, metric: { rule: 'repeated', type: 'Metric', id: 4 } } },
  },
});
export const MetricFamilyType = root.lookupType('MetricFamily');

export interface DecodedFamily {
  name: string;
  help: string;
  type: number;
  metric: DecodedMetric[];
}
export interface DecodedMetric {
  label: { name: string; value: string }[];
  gauge?: { value: number };
  counter?: { value: number };
  histogram?: DecodedHistogram;
  timestampMs?: number;
}
export interface DecodedHistogram {
  sampleCount: number;
  sampleSum: number;
  bucket: { cumulativeCount: number; upperBound: number }[];
  schema?: number;
  zeroThreshold?: number;
  zeroCount?: number;
  positiveSpan: { offset: number; length: number }[];
  positiveDelta: number[];
}

/** Every length-delimited MetricFamily of a body, in order. */
export function decodeFamilies(body: Uint8Array): DecodedFamily[] {
  const reader = protobuf.Reader.create(body);
  const out: DecodedFamily[] = [];
  while (reader.pos < reader.len) out.push(MetricFamilyType.toObject(MetricFamilyType.decodeDelimited(reader), { longs: Number, arrays: true, defaults: false }) as DecodedFamily);
  return out;
}

/** The families as one body, each length-delimited, as /metrics serves them. */
export function encodeFamilies(families: readonly DecodedFamily[]): Buffer {
  const w = protobuf.Writer.create();
  for (const f of families) MetricFamilyType.encodeDelimited(MetricFamilyType.fromObject(f), w);
  return Buffer.from(w.finish());
}
