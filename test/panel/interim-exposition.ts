// INTERIM DATA SOURCE, to be replaced by the real sidecar stack (test/support's
// startRecordedStack) once the sidecar's /metrics is ready.
//
// A small fleet of simulated inbound sidecars: each pod's calls are drawn from fixed per-operation,
// per-protocol profiles (rate, latency, errors, deadline misses, payload sizes, resets) and
// accumulated into counters and classic histograms named and labelled as METRICS.md says, served
// in the Prometheus text format over a real HTTP server for a real Prometheus to scrape. At
// `switchAtMs` the traffic changes the way the panel's stories need it to: a deploy makes
// CreateOrder faster, GetOrder's REST clients move to gRPC, and one pod starts taking most calls
// (a sticky HTTP/2 client).
import { createServer, type Server } from 'node:http';

const PROTOCOLS = ['grpc', 'grpc_web', 'connect', 'rest'] as const;
type Protocol = (typeof PROTOCOLS)[number];

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const PAYLOAD_BUCKETS = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864];

/** Fleet-wide figures for one operation over one protocol: [before the switch, after it]. */
interface Profile {
  operation: string;
  protocol: Protocol;
  method: string;
  rate: [number, number];
  medianMs: [number, number];
  errorRatio: [number, number];
  deadlineRatio: [number, number];
  reqBytes: number;
  respBytes: number;
  resetsPerSecond: number;
}

const SVC = 'orders.v1.OrderService';
const rpc = (name: string) => `${SVC}/${name}`;

function profiles(): Profile[] {
  const out: Profile[] = [];
  const add = (
    name: string,
    rest: string,
    rates: Record<Protocol, [number, number]>,
    medians: Record<Protocol, [number, number]>,
    errors: [number, number],
    deadlines: [number, number],
    bytes: { proto: [number, number]; json: [number, number] }
  ) => {
    for (const protocol of PROTOCOLS) {
      const json = protocol === 'rest' || protocol === 'connect';
      const [req, resp] = json ? bytes.json : bytes.proto;
      out.push({
        operation: rpc(name),
        protocol,
        method: protocol === 'rest' ? rest : rpc(name),
        rate: rates[protocol],
        medianMs: medians[protocol],
        errorRatio: protocol === 'rest' ? [errors[0] * 2, errors[1] * 2] : errors,
        // REST callers here send no deadline, so none can be missed.
        deadlineRatio: protocol === 'rest' ? [0, 0] : deadlines,
        reqBytes: req,
        respBytes: resp,
        resetsPerSecond: protocol === 'grpc' ? 0.3 : protocol === 'rest' ? 0.2 : 0.05,
      });
    }
  };
  add(
    'GetOrder',
    'GET /v1/orders/{id}',
    { grpc: [15, 40], grpc_web: [6, 6], connect: [6, 10], rest: [30, 0.3] },
    { grpc: [6, 6], grpc_web: [9, 9], connect: [7, 7], rest: [16, 16] },
    [0.002, 0.002],
    [0.001, 0.001],
    { proto: [24, 310], json: [180, 1400] }
  );
  add(
    'ListOrders',
    'GET /v1/orders',
    { grpc: [8, 10], grpc_web: [4, 4], connect: [4, 4], rest: [10, 10] },
    { grpc: [22, 22], grpc_web: [28, 28], connect: [25, 25], rest: [55, 55] },
    [0.004, 0.004],
    [0, 0],
    { proto: [40, 5200], json: [260, 23000] }
  );
  add(
    'CreateOrder',
    'POST /v1/orders',
    { grpc: [15, 18], grpc_web: [3, 3], connect: [3, 3], rest: [6, 6] },
    { grpc: [40, 14], grpc_web: [45, 18], connect: [42, 15], rest: [80, 80] },
    [0.02, 0.005],
    [0.01, 0.002],
    { proto: [420, 120], json: [1900, 600] }
  );
  return out;
}

/** Deterministic draws, so every run sees the same distributions. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Histogram {
  buckets: number[];
  sum: number;
  count: number;
}

const labelText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)
    .join(',');

/** One pod's instruments: counters and histograms keyed by their label set. */
class PodMetrics {
  readonly counters = new Map<string, Map<string, number>>();
  readonly histograms = new Map<string, Map<string, Histogram>>();
  readonly gauges = new Map<string, Map<string, number>>();

  inc(name: string, labels: Record<string, string>, by = 1): void {
    const key = labelText(labels);
    const m = this.counters.get(name) ?? new Map<string, number>();
    this.counters.set(name, m);
    m.set(key, (m.get(key) ?? 0) + by);
  }

  observe(name: string, bounds: number[], labels: Record<string, string>, value: number): void {
    const key = labelText(labels);
    const m = this.histograms.get(name) ?? new Map<string, Histogram>();
    this.histograms.set(name, m);
    let h = m.get(key);
    if (!h) {
      h = { buckets: bounds.map(() => 0), sum: 0, count: 0 };
      m.set(key, h);
    }
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]!) {
        h.buckets[i]!++;
      }
    }
    h.sum += value;
    h.count++;
  }

  set(name: string, labels: Record<string, string>, value: number): void {
    const m = this.gauges.get(name) ?? new Map<string, number>();
    this.gauges.set(name, m);
    m.set(labelText(labels), value);
  }

  exposition(): string {
    const lines: string[] = [];
    for (const [name, m] of this.counters) {
      lines.push(`# TYPE ${name} counter`);
      for (const [labels, v] of m) {
        lines.push(`${name}{${labels}} ${v}`);
      }
    }
    for (const [name, m] of this.gauges) {
      lines.push(`# TYPE ${name} gauge`);
      for (const [labels, v] of m) {
        lines.push(`${name}{${labels}} ${v}`);
      }
    }
    for (const [name, m] of this.histograms) {
      const bounds = name === 'rpcscope_payload_bytes' ? PAYLOAD_BUCKETS : DURATION_BUCKETS;
      lines.push(`# TYPE ${name} histogram`);
      for (const [labels, h] of m) {
        bounds.forEach((le, i) => lines.push(`${name}_bucket{${labels},le="${le}"} ${h.buckets[i]}`));
        lines.push(`${name}_bucket{${labels},le="+Inf"} ${h.count}`);
        lines.push(`${name}_sum{${labels}} ${h.sum}`);
        lines.push(`${name}_count{${labels}} ${h.count}`);
      }
    }
    return lines.join('\n') + '\n';
  }
}

const REST_STATUS: Record<string, string> = { OK: '200', INTERNAL: '500', UNAVAILABLE: '503', DEADLINE_EXCEEDED: '504' };

export interface InterimFleetOptions {
  pods: string[];
  /** When the traffic changes (epoch ms). */
  switchAtMs: number;
  /** Each pod's share of the calls before and after the switch. */
  shares: { before: number[]; after: number[] };
  seed?: number;
}

export class InterimFleet {
  private readonly metrics: Map<string, PodMetrics>;
  private readonly random: () => number;
  private readonly profiles = profiles();
  /** Fractional calls and resets carried over between ticks, so low rates still happen. */
  private readonly carry = new Map<string, number>();
  private last = Date.now();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: InterimFleetOptions) {
    this.metrics = new Map(opts.pods.map((p) => [p, new PodMetrics()]));
    this.random = mulberry32(opts.seed ?? 7);
  }

  start(): void {
    this.last = Date.now();
    this.advance();
    this.timer = setInterval(() => this.advance(), 100);
  }

  stop(): void {
    if (this.timer) {
      clearInterval(this.timer);
    }
  }

  exposition(pod: string): string | null {
    this.advance();
    return this.metrics.get(pod)?.exposition() ?? null;
  }

  private gaussian(): number {
    const u = Math.max(this.random(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.random());
  }

  /** How many events at `ratePerSecond` fall in `seconds`, keeping the fraction for next time. */
  private events(key: string, ratePerSecond: number, seconds: number): number {
    const expected = (this.carry.get(key) ?? 0) + ratePerSecond * seconds;
    const n = Math.floor(expected);
    this.carry.set(key, expected - n);
    return n;
  }

  /** Generates the calls of the time since the last call, in the phase they fall in. */
  private advance(): void {
    const now = Date.now();
    const seconds = (now - this.last) / 1000;
    this.last = now;
    if (seconds <= 0) {
      return;
    }
    const phase = now >= this.opts.switchAtMs ? 1 : 0;
    const shares = phase === 1 ? this.opts.shares.after : this.opts.shares.before;
    this.opts.pods.forEach((pod, podIndex) => {
      const m = this.metrics.get(pod)!;
      const share = shares[podIndex] ?? 0;
      for (const p of this.profiles) {
        this.calls(m, p, phase, this.events(`${pod}|${p.operation}|${p.protocol}`, p.rate[phase] * share, seconds));
        const resets = this.events(`${pod}|${p.operation}|${p.protocol}|reset`, p.resetsPerSecond * share, seconds);
        if (resets > 0) {
          m.inc(
            'rpcscope_stream_resets_total',
            {
              direction: 'inbound',
              protocol: p.protocol,
              method: p.method,
              side: 'client',
              error_code: p.protocol === 'rest' ? 'CONNECTION_CLOSED' : 'CANCEL',
            },
            resets
          );
        }
      }
      // A sticky client holds one HTTP/2 connection to the pod it first reached: after the
      // switch that pod serves most calls over few connections.
      const pinned = phase === 1 && podIndex === 0;
      m.set('rpcscope_connections_active', { side: 'downstream', http_version: '2' }, pinned ? 2 : 6);
      m.set('rpcscope_connections_active', { side: 'downstream', http_version: '1.1' }, 3);
    });
  }

  private calls(m: PodMetrics, p: Profile, phase: 0 | 1, n: number): void {
    const encoding = p.protocol === 'rest' || p.protocol === 'connect' ? 'json' : 'proto';
    const base = { direction: 'inbound', protocol: p.protocol, encoding, method: p.method, operation: p.operation };
    for (let i = 0; i < n; i++) {
      let duration = (p.medianMs[phase] / 1000) * Math.exp(0.45 * this.gaussian());
      let code = 'OK';
      const r = this.random();
      if (r < p.deadlineRatio[phase]) {
        code = 'DEADLINE_EXCEEDED';
        // The call ended after its 250 ms budget.
        duration = 0.25 + 0.05 * this.random();
      } else if (r < p.deadlineRatio[phase] + p.errorRatio[phase]) {
        code = this.random() < 0.5 ? 'INTERNAL' : 'UNAVAILABLE';
      }
      const httpStatus = p.protocol === 'rest' ? REST_STATUS[code]! : '200';
      m.inc('rpcscope_calls_total', { ...base, code, http_status: httpStatus });
      m.observe('rpcscope_call_duration_seconds', DURATION_BUCKETS, { ...base, code }, duration);
      const jitter = () => 0.8 + 0.4 * this.random();
      m.observe('rpcscope_payload_bytes', PAYLOAD_BUCKETS, { ...base, flow: 'request' }, Math.round(p.reqBytes * jitter()));
      m.observe('rpcscope_payload_bytes', PAYLOAD_BUCKETS, { ...base, flow: 'response' }, Math.round(p.respBytes * jitter()));
    }
  }
}

export interface ExpositionServer {
  /** host:port; each pod's exposition is at /metrics/<pod>. */
  address: string;
  close(): Promise<void>;
}

export function serveExposition(fleet: InterimFleet): Promise<ExpositionServer> {
  const server: Server = createServer((req, res) => {
    const pod = decodeURIComponent((req.url ?? '').replace(/^\/metrics\//, '').split('?')[0] ?? '');
    const body = fleet.exposition(pod);
    if (body === null) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(body);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolve({
        address: `127.0.0.1:${port}`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}
