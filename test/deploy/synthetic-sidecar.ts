// A stand-in for a sidecar's admin port: a real HTTP server that serves, on
// /metrics, every series METRICS.md defines, with every label it lists and
// values that grow on each scrape the way a pod carrying traffic would. Built
// from the contract itself, so a metric or label added there shows up here.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Contract, ContractMetric } from './metrics-contract.ts';

type LabelSet = Record<string, string>;

const OPERATION_GET = 'order.v1.OrderService/GetOrder';
const OPERATION_WATCH = 'order.v1.OrderService/WatchOrders';

// One logical operation over every protocol, plus a stream, as the demo order service serves them.
const CALL_SHAPES: LabelSet[] = [
  { protocol: 'grpc', encoding: 'proto', method: OPERATION_GET, operation: OPERATION_GET },
  { protocol: 'grpc_web', encoding: 'text', method: OPERATION_GET, operation: OPERATION_GET },
  { protocol: 'connect', encoding: 'json', method: OPERATION_GET, operation: OPERATION_GET },
  { protocol: 'rest', encoding: 'json', method: 'GET /v1/orders/{id}', operation: OPERATION_GET },
  { protocol: 'grpc', encoding: 'proto', method: OPERATION_WATCH, operation: OPERATION_WATCH },
];

const OUTCOMES: (LabelSet & { weight: string })[] = [
  { code: 'OK', http_status: '200', weight: '20' },
  { code: 'UNAVAILABLE', http_status: '503', weight: '1' },
  { code: 'DEADLINE_EXCEEDED', http_status: '504', weight: '1' },
];

const SIDES: Record<string, string[]> = {
  rpcscope_stream_resets_total: ['client', 'upstream'],
  rpcscope_http2_goaways_total: ['client', 'proxy'],
};
const ERROR_CODES: Record<string, string[]> = {
  rpcscope_stream_resets_total: ['CANCEL', 'REFUSED_STREAM'],
  rpcscope_http2_goaways_total: ['NO_ERROR'],
};

function valuesOf(metric: string, label: string): string[] {
  switch (label) {
    case 'direction':
      return ['inbound', 'outbound'];
    case 'flow':
      return ['request', 'response'];
    case 'side':
      return SIDES[metric] ?? ['downstream', 'upstream'];
    case 'error_code':
      return ERROR_CODES[metric] ?? ['CANCEL'];
    case 'detected_by':
      return ['status', 'late_response'];
    case 'stream_type':
      return ['server_streaming'];
    case 'http_version':
      return ['2', '1.1'];
    case 'upstream':
      return ['127.0.0.1:17001', '127.0.0.1:17002', '127.0.0.1:17003'];
    default:
      throw new Error(`synthetic sidecar: no values for label ${label} of ${metric}; METRICS.md has a label this stand-in does not know`);
  }
}

const CALL_LABELS = new Set(['protocol', 'encoding', 'method', 'operation']);
const OUTCOME_LABELS = new Set(['code', 'http_status']);

function product(sets: LabelSet[], more: LabelSet[]): LabelSet[] {
  return sets.flatMap((a) => more.map((b) => ({ ...a, ...b })));
}

/** Every label set a metric is served with; each listed label is on every one of them. */
export function labelSets(m: ContractMetric): LabelSet[] {
  let sets: LabelSet[] = [{}];
  const pick = (shape: LabelSet, keys: Set<string>): LabelSet =>
    Object.fromEntries(Object.entries(shape).filter(([k]) => keys.has(k) && m.labels.includes(k)));
  if (m.labels.some((l) => CALL_LABELS.has(l))) sets = product(sets, CALL_SHAPES.map((s) => pick(s, CALL_LABELS)));
  if (m.labels.some((l) => OUTCOME_LABELS.has(l))) sets = product(sets, OUTCOMES.map((s) => pick(s, OUTCOME_LABELS)));
  for (const label of m.labels) {
    if (CALL_LABELS.has(label) || OUTCOME_LABELS.has(label)) continue;
    sets = product(sets, valuesOf(m.name, label).map((v) => ({ [label]: v })));
  }
  const seen = new Map<string, LabelSet>();
  for (const s of sets) seen.set(JSON.stringify(Object.entries(s).sort()), s);
  return [...seen.values()];
}

function bucketsFor(name: string): number[] {
  if (name.endsWith('_bytes')) return [64, 256, 1024, 4096, 65536];
  if (name.endsWith('_ratio')) return [0.1, 0.25, 0.5, 0.75, 1, 1.5, 2];
  if (name.endsWith('_seconds')) return [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];
  return [1, 10, 100, 1000, 10000];
}

function escape(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function fmt(name: string, labels: LabelSet, value: number): string {
  const body = Object.entries(labels)
    .map(([k, v]) => `${k}="${escape(v)}"`)
    .join(',');
  return `${name}${body ? `{${body}}` : ''} ${value}`;
}

/** The exposition text after `scrapes` scrapes of a pod whose traffic is `weight` times the base rate. */
export function exposition(contract: Contract, scrapes: number, weight: number): string {
  const lines: string[] = [];
  for (const m of contract.metrics.values()) {
    lines.push(`# HELP ${m.name} ${m.name} (synthetic)`, `# TYPE ${m.name} ${m.type}`);
    for (const labels of labelSets(m)) {
      const outcome = OUTCOMES.find((o) => o.code === labels.code);
      const perScrape = weight * Number(outcome?.weight ?? 5);
      if (m.type === 'counter') {
        lines.push(fmt(m.name, labels, scrapes * perScrape));
      } else if (m.type === 'gauge') {
        lines.push(fmt(m.name, labels, m.name === 'rpcscope_load_skew_ratio' ? 1.25 : 2 * weight));
      } else {
        const count = scrapes * perScrape;
        const bounds = bucketsFor(m.name);
        bounds.forEach((le, i) => {
          lines.push(fmt(`${m.name}_bucket`, { ...labels, le: String(le) }, Math.floor((count * (i + 1)) / (bounds.length + 1))));
        });
        lines.push(fmt(`${m.name}_bucket`, { ...labels, le: '+Inf' }, count));
        lines.push(fmt(`${m.name}_sum`, labels, count * (bounds[Math.floor(bounds.length / 2)] ?? 1)));
        lines.push(fmt(`${m.name}_count`, labels, count));
      }
    }
  }
  lines.push(
    '# TYPE process_cpu_seconds_total counter',
    fmt('process_cpu_seconds_total', {}, scrapes * 0.01),
    '# TYPE process_resident_memory_bytes gauge',
    fmt('process_resident_memory_bytes', {}, 48 * 1024 * 1024),
    '# TYPE target_info gauge',
    fmt('target_info', { service_name: 'rpcscope' }, 1),
  );
  return `${lines.join('\n')}\n`;
}

export interface SyntheticSidecar {
  address: string;
  close(): Promise<void>;
}

export async function startSyntheticSidecar(contract: Contract, weight: number): Promise<SyntheticSidecar> {
  let scrapes = 0;
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    scrapes += 1;
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
    res.end(exposition(contract, scrapes, weight));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
