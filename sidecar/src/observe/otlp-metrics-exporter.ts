// Pushes the sidecar's metrics to an OTLP/HTTP receiver (an OpenTelemetry
// Collector) every OTEL_METRIC_EXPORT_INTERVAL, read from the cells /metrics
// serves (otlp-metrics-reader.ts). Calls never wait on it: an export runs on a
// timer, at most one is ever in flight, one that takes longer than its timeout
// is cut, and a tick that finds the previous export still out skips its turn;
// each outcome is counted in rpcscope_otlp_exports_total{outcome}. Nothing is
// queued: the next export reads the cells afresh, so with cumulative
// temporality a dropped or failed export loses nothing but a point in time.
import http from 'node:http';
import type Zlib from 'node:zlib';
import { nodeHttps } from '../builtins.ts';
import type { Logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { ValueFamily, type HistogramFamily, type MetricFamily, type ValueCell } from './metric-cells.ts';
import { encodeJson, encodeProtobuf, stringAttributes, type ExportMetricsServiceRequest } from './otlp-metrics-encoding.ts';
import { OtlpMetricsReader, type SidecarPeers } from './otlp-metrics-reader.ts';
import type { OtlpMetricsSettings } from './otlp-metrics-settings.ts';

export type ExportOutcome = 'success' | 'failure' | 'timeout' | 'dropped';
const OUTCOMES: readonly ExportOutcome[] = ['success', 'failure', 'timeout', 'dropped'];

/** A failing receiver is logged at most this often. */
const WARN_INTERVAL_MS = 60_000;
/** The export at shutdown gets at most this long: a drain is not held up by a receiver that is down. */
const FINAL_EXPORT_MS = 2000;

/** node:zlib, loaded for the first gzip export only. */
let zlib: typeof Zlib | undefined;

export interface MetricsSource {
  /** Brings the values read only at scrape time up to date; returns every family and the call latency one. */
  collect(): { families: readonly MetricFamily[]; callDuration: HistogramFamily };
}

export class OtlpMetricsExporter {
  readonly exports = new ValueFamily('rpcscope_otlp_exports_total', 'OTLP metric exports, by outcome.', 'counter');
  private readonly outcomes: Record<ExportOutcome, ValueCell>;
  /** Made at the first export: collecting is a scrape (it ages departed endpoints), not for a constructor. */
  private reader: OtlpMetricsReader | undefined;
  private readonly startMs: number;
  private readonly agent: http.Agent;
  private readonly resource: ExportMetricsServiceRequest['resourceMetrics'][number]['resource'];
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private lastWarning = -Infinity;

  constructor(
    private readonly settings: OtlpMetricsSettings,
    resourceAttributes: Readonly<Record<string, string>>,
    private readonly source: MetricsSource,
    private readonly log: Logger,
    private readonly peers: SidecarPeers,
    private readonly clock: () => number = Date.now,
  ) {
    this.outcomes = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, this.exports.cell({ outcome })])) as Record<ExportOutcome, ValueCell>;
    this.startMs = clock();
    // One connection, kept: an export every interval should not pay a handshake each time.
    const options = { keepAlive: true, maxSockets: 1 };
    // node:https (and TLS with it) only for an https:// receiver: idle memory is paid in every pod.
    this.agent = settings.url.protocol === 'https:' ? new (nodeHttps().Agent)({ ...options, ...settings.tls }) : new http.Agent(options);
    this.resource = { attributes: stringAttributes(resourceAttributes) };
  }

  start(): void {
    this.timer = setInterval(() => this.tick(), this.settings.intervalMs);
    this.timer.unref();
  }

  /** The timer's turn: an export, unless the previous one is still out. */
  tick(): void {
    if (this.inFlight !== undefined) {
      this.outcomes.dropped.value++;
      return;
    }
    this.inFlight = this.export(this.settings.timeoutMs).finally(() => (this.inFlight = undefined));
  }

  /** Stops the timer and sends the last values, if the receiver takes them in time: a drain waits FINAL_EXPORT_MS at most. */
  async shutdown(): Promise<void> {
    clearInterval(this.timer);
    if (this.inFlight === undefined) {
      await this.export(Math.min(this.settings.timeoutMs, FINAL_EXPORT_MS));
    } else {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([this.inFlight, new Promise<void>((r) => (timer = setTimeout(r, FINAL_EXPORT_MS)))]);
      clearTimeout(timer);
    }
    this.agent.destroy();
  }

  private async export(timeoutMs: number): Promise<void> {
    let body: Buffer;
    try {
      const { families, callDuration } = this.source.collect();
      this.reader ??= new OtlpMetricsReader(this.settings.temporality, this.startMs, callDuration, this.peers);
      // The exports' own counter is among them: observation.ts adds it to /metrics.
      const metrics = this.reader.read(families, this.clock());
      const request: ExportMetricsServiceRequest = { resourceMetrics: [{ resource: this.resource, scopeMetrics: [{ scope: { name: 'rpcscope', version: VERSION }, metrics }] }] };
      const json = this.settings.protocol === 'http/json';
      const encoded = json ? encodeJson(request) : Buffer.from(encodeProtobuf(request));
      body = this.settings.gzip ? (zlib ??= process.getBuiltinModule('node:zlib')).gzipSync(encoded) : encoded;
    } catch (err) {
      this.failed('failure', `could not encode the export: ${(err as Error).message}`);
      return;
    }
    const outcome = await this.post(body, timeoutMs);
    if (outcome === 'success') this.outcomes.success.value++;
  }

  private post(body: Buffer, timeoutMs: number): Promise<ExportOutcome> {
    const { url, protocol, headers, gzip } = this.settings;
    const transport = url.protocol === 'https:' ? nodeHttps() : http;
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: ExportOutcome, why?: string): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (outcome !== 'success') this.failed(outcome, why ?? outcome);
        resolve(outcome);
      };
      const req = transport.request(
        url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            ...headers,
            'content-type': protocol === 'http/json' ? 'application/json' : 'application/x-protobuf',
            'content-length': body.length,
            'user-agent': `rpcscope/${VERSION}`,
            ...(gzip ? { 'content-encoding': 'gzip' } : {}),
          },
        },
        (res) => {
          // The body (a partial-success report or an error status) is not read: drained and dropped.
          res.resume();
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            settle(status >= 200 && status < 300 ? 'success' : 'failure', `HTTP ${status}`);
          });
          res.on('error', (err) => settle('failure', err.message));
        },
      );
      const timer = setTimeout(() => {
        settle('timeout', `no answer within ${timeoutMs} ms`);
        req.destroy();
      }, timeoutMs);
      timer.unref();
      req.on('error', (err) => settle('failure', err.message));
      req.end(body);
    });
  }

  private failed(outcome: ExportOutcome, why: string): void {
    if (outcome !== 'success' && outcome !== 'dropped') this.outcomes[outcome].value++;
    const now = this.clock();
    if (now - this.lastWarning < WARN_INTERVAL_MS) return;
    this.lastWarning = now;
    this.log.warn('OTLP metrics export failed; the calls are not affected, and the next export sends the current values', { url: this.settings.url.href, outcome, reason: why });
  }
}
