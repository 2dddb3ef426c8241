// The metrics observer: every call, stream, reset, GOAWAY, deadline and
// connection fact of docs/metrics.md, served on /metrics in the Prometheus text
// format, or in OpenMetrics text, with trace exemplars on the call latency
// buckets, when the scraper asks for it.
//
// The hot path only increments cells bound when a route (or connection kind,
// or endpoint) is first seen; a scrape renders the cells itself
// (prometheus-text.ts) rather than through OpenTelemetry's Prometheus exporter,
// whose per-line label escaping stalled the event loop and could only be
// avoided through its private members. OpenTelemetry still describes the
// resource that `target_info` carries. The names and labels are the public
// contract of docs/metrics.md (metrics/catalogue.ts; the golden tests pin them).
//
// This file routes each event to the recorder of its families (metrics/*-recorder.ts)
// and renders the exposition; the cells a route binds are in metrics/route-cells.ts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SpanContext } from '@opentelemetry/api';
import type { CallRecord } from '../call/call-record.ts';
import type { Faults } from '../call/faults.ts';
import type { ConnectionRecord, GoawaySide, Observer } from '../call/observer.ts';
import { decideCodeNumber } from '../call/call-outcome.ts';
import { DETAIL_LEVELS } from './metrics-detail.ts';
import type { MetricsDetail } from '../config/schema.ts';
import { ProcessMetrics } from './process-metrics.ts';
import { OPENMETRICS_CONTENT_TYPE, OPENMETRICS_EOF, acceptsOpenMetrics, openMetricsHeader } from './openmetrics-text.ts';
import { targetInfo } from './prometheus-text.ts';
import { PROTOBUF_CONTENT_TYPE, acceptsProtobuf, newWriter, writeFamily } from './prometheus-protobuf.ts';
import type { HistogramFormat } from '../config/load.ts';
import { HistogramFamily, TextSink, ValueFamily, type ExpositionSink, type MetricFamily } from './metric-cells.ts';
import type { MethodShape } from '../route/proto-catalog.ts';
import type { Route, Router } from '../route/router.ts';
import { CallObservation, CallRecorder } from './metrics/call-recorder.ts';
import { InFlightCalls } from './metrics/in-flight.ts';
import { MetricCatalogue } from './metrics/catalogue.ts';
import { ConnectionRecorder } from './metrics/connection-recorder.ts';
import { DeadlineRecorder } from './metrics/deadline-recorder.ts';
import { FaultRecorder } from './metrics/fault-recorder.ts';
import { ResetRecorder } from './metrics/reset-recorder.ts';
import { RouteCellTable, type RouteCells } from './metrics/route-cells.ts';
import { UpstreamRecorder } from './metrics/upstream-recorder.ts';

export interface MetricsObserverOptions {
  /**
   * The router the data plane resolves call routes with (built once, in the
   * pipeline); calls whose record carries no route (built outside the pipeline)
   * are resolved here with it too.
   */
  router: Router;
  /** `service.name` on target_info. */
  serviceName?: string;
  /** Every upstream endpoint known now (`host:port`), for the endpoint gauge and the skew; idle ones count. */
  knownEndpoints?: () => readonly string[];
  /**
   * How long an endpoint no longer known, with no connection or call left, keeps its
   * `rpcscope_upstream_*` series (--endpoint-series-ttl; 0: forever).
   */
  endpointSeriesTtlMs?: number;
  /** The clock endpoint departures are timed by; Date.now by default. */
  clock?: () => number;
  /** Where POD_NAME and POD_NAMESPACE (the Downward API) and RPCSCOPE_COMMIT are read; process.env by default. */
  env?: Readonly<Record<string, string | undefined>>;
  /** The sidecar's contained faults and cut connections, read at each scrape. */
  faults?: Faults;
  /** How much of the per-method distribution to export (--metrics-detail); `standard` by default. */
  detail?: MetricsDetail;
  /**
   * With tracing on, the span of a call (call-tracing.ts), asked for while the
   * call ends: its trace becomes the exemplar of the call's latency bucket.
   */
  spanOf?: (call: CallRecord) => SpanContext | undefined;
  /** Unix milliseconds at performance.now() = 0, which dates the exemplars; performance.timeOrigin by default. */
  timeOrigin?: number;
  /**
   * Whether every histogram keeps exponential buckets beside its explicit ones,
   * for an OTLP export that asks for them (otlp-metrics-settings.ts): a few
   * tenths of a microsecond per recorded value, paid only then.
   */
  exponentialHistograms?: boolean;
  /** --histograms: `classic` by default (text formats only); `native` or `both` serve the protobuf exposition to a scraper that asks for it. */
  histograms?: HistogramFormat;
}

export interface MetricsObserver extends Observer {
  /** Serves the exposition, OpenMetrics if the Accept header asks for it; mount it on the admin port's /metrics. */
  handleMetrics(req: IncomingMessage, res: ServerResponse): void;
  /** The exposition text /metrics serves, Prometheus or OpenMetrics. */
  render(openMetrics?: boolean): string;
  /** Families kept elsewhere (retries, translation, shadow, the admin port, OTLP exports): served after the call metrics, and collected with them. */
  addFamilies(families: readonly MetricFamily[]): void;
  /**
   * Brings the values read only at scrape time up to date and hands over the
   * families themselves, for an OTLP export (otlp-metrics-exporter.ts).
   */
  collect(): { families: readonly MetricFamily[]; callDuration: HistogramFamily };
  /** The route, hence the `method` and `operation` labels, a call has in these metrics. */
  route(call: CallRecord): Route;
  shutdown(): Promise<void>;
}

/** The text format's media type (https://prometheus.io/docs/instrumenting/exposition_formats/#basic-info). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * How long a scrape runs before it lets calls through (setImmediate): a scrape
 * is a string of slices of about this much, each family rendered within one
 * (docs/metrics.md "Scrapes and the event loop").
 */
const SLICE_MS = 1;

class MetricsObserverImpl implements MetricsObserver {
  private readonly catalogue: MetricCatalogue;
  private readonly routes: RouteCellTable;
  private readonly calls: CallRecorder;
  private readonly resets: ResetRecorder;
  private readonly deadlines: DeadlineRecorder;
  private readonly connections: ConnectionRecorder;
  private readonly upstreams: UpstreamRecorder;
  private readonly faults: FaultRecorder;
  private readonly extraFamilies: MetricFamily[] = [];
  private readonly router: Router;
  /** Calls in flight: their message counts and endpoints are read at each scrape. */
  private readonly inFlight = new InFlightCalls<CallObservation>();
  private readonly processMetrics: ProcessMetrics;
  private readonly targetInfo: string;
  private readonly openMetricsTargetInfo: string;
  private readonly exponential: boolean;
  /** target_info as a family, for the protobuf exposition. */
  private readonly targetInfoFamily = new ValueFamily('target_info', 'Target metadata', 'gauge');
  private readonly histograms: HistogramFormat;

  constructor(opts: MetricsObserverOptions) {
    const level = DETAIL_LEVELS[opts.detail ?? 'standard'];
    this.histograms = opts.histograms ?? 'classic';
    const catalogue = (this.catalogue = new MetricCatalogue(level, this.histograms !== 'classic'));
    this.exponential = opts.exponentialHistograms ?? false;
    this.keepExponential(catalogue.families);
    this.routes = new RouteCellTable(catalogue.callsActive);
    this.calls = new CallRecorder(catalogue, level, opts.spanOf, opts.timeOrigin ?? performance.timeOrigin);
    this.resets = new ResetRecorder(catalogue);
    this.deadlines = new DeadlineRecorder(catalogue);
    this.connections = new ConnectionRecorder(catalogue);
    this.upstreams = new UpstreamRecorder(catalogue, { knownEndpoints: opts.knownEndpoints, endpointSeriesTtlMs: opts.endpointSeriesTtlMs ?? 0, clock: opts.clock ?? Date.now });
    this.faults = new FaultRecorder(catalogue, opts.faults);
    this.router = opts.router;
    const env = opts.env ?? process.env;
    // OpenTelemetry's resource attributes (service.name, then the Kubernetes
    // resource semantic conventions), written as the target_info family.
    const attributes = {
      'service.name': opts.serviceName ?? 'rpcscope',
      // Kubernetes resource semantic conventions; absent outside a pod.
      ...(env.POD_NAME ? { 'k8s.pod.name': env.POD_NAME } : {}),
      ...(env.POD_NAMESPACE ? { 'k8s.namespace.name': env.POD_NAMESPACE } : {}),
    };
    this.targetInfo = targetInfo(attributes);
    this.openMetricsTargetInfo = targetInfo(attributes, openMetricsHeader);
    this.targetInfoFamily.cell(attributes).value = 1;
    this.processMetrics = new ProcessMetrics(env);
  }

  handleMetrics(req: IncomingMessage, res: ServerResponse): void {
    // Protobuf only when it carries something the text formats cannot: native histograms.
    if (this.histograms !== 'classic' && acceptsProtobuf(req.headers.accept)) void this.serveProtobuf(res);
    else void this.serveMetrics(acceptsOpenMetrics(req.headers.accept), res);
  }

  /** The protobuf exposition, in slices as serveMetrics: each family encoded at once, calls let through between families. */
  private async serveProtobuf(res: ServerResponse): Promise<void> {
    let deadline = performance.now() + SLICE_MS;
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    const classic = this.histograms === 'both';
    const encode = (family: MetricFamily): void => {
      const w = newWriter();
      writeFamily(w, family, classic);
      const chunk = w.finish();
      chunks.push(chunk);
      bytes += chunk.length;
    };
    try {
      this.refresh();
      encode(this.targetInfoFamily);
      for (const family of this.families()) {
        encode(family);
        if (performance.now() >= deadline) {
          await nextTurn();
          deadline = performance.now() + SLICE_MS;
        }
        if (res.destroyed) return;
      }
      for (const family of this.processMetrics.update()) encode(family);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`# failed to render metrics: ${(err as Error).message}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': PROTOBUF_CONTENT_TYPE, 'content-length': bytes });
    for (const chunk of chunks) res.write(chunk);
    res.end();
  }

  /**
   * A scrape in slices of SLICE_MS, so that calls never wait behind one: first the
   * label text of cells never scraped (it never changes, so nothing can tear),
   * then the values, family by family, each family rendered at once into bytes,
   * then the bytes written a chunk at a time. The response keeps its content-length.
   */
  private async serveMetrics(openMetrics: boolean, res: ServerResponse): Promise<void> {
    let deadline = performance.now() + SLICE_MS;
    const slice = async (): Promise<void> => {
      await nextTurn();
      deadline = performance.now() + SLICE_MS;
    };
    const sink = new ChunkSink();
    try {
      for (const family of this.families()) {
        while (!family.prepareLabels(deadline)) await slice();
      }
      const steps = this.renderSteps(sink, openMetrics);
      while (steps.next().done !== true) {
        if (performance.now() >= deadline) await slice();
        if (res.destroyed) return;
      }
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`# failed to render metrics: ${(err as Error).message}\n`);
      return;
    }
    const chunks = sink.finish();
    res.writeHead(200, { 'content-type': openMetrics ? OPENMETRICS_CONTENT_TYPE : CONTENT_TYPE, 'content-length': sink.bytes });
    for (const chunk of chunks) {
      res.write(chunk);
      if (performance.now() >= deadline) await slice();
      if (res.destroyed) return;
    }
    res.end();
  }

  async shutdown(): Promise<void> {
    this.processMetrics.stop();
  }

  route(call: CallRecord): Route {
    // Resolved as the call started (call/call.ts); records built elsewhere are resolved now.
    return call.route ?? this.router.resolveCall(call);
  }

  callStarted(call: CallRecord): void {
    if (call.trpc) {
      this.trpcStarted(call);
      return;
    }
    const cells = this.cellsFor(call);
    cells.active.value++;
    const obs = new CallObservation(cells);
    call.observation = obs;
    this.inFlight.add(call, obs);
  }

  /** Each procedure of a tRPC call is in flight, a batch of N counting N. */
  private trpcStarted(call: CallRecord): CallObservation {
    const procedures = call.trpc!.procedures.map((p) => this.routes.get(call.direction, this.router.resolveProcedure(p.path)));
    for (const cells of procedures) cells.active.value++;
    const obs = new CallObservation(procedures[0]!);
    obs.procedures = procedures;
    call.observation = obs;
    this.inFlight.add(call, obs);
    return obs;
  }

  callEnded(call: CallRecord): void {
    const started = call.observation;
    const ours = started instanceof CallObservation ? started : undefined;
    let obs: CallObservation;
    if (ours !== undefined) {
      obs = ours;
    } else {
      // The slot holds no state of ours: the call started before this observer
      // did, or another observer took the slot. Resolving the route again gives
      // the same cells (a route, once admitted, stays admitted).
      obs = new CallObservation(this.cellsFor(call));
    }
    call.observation = undefined;
    if (call.trpc) {
      // A tRPC call ends as N procedure calls (calls, bytes, latency, each with its
      // own outcome) carried by one HTTP call (proxy overhead, resets, the upstream
      // endpoint's counts), as docs/metrics.md "tRPC" sets out.
      const trpcObs = obs.procedures ? obs : this.trpcStarted(call);
      // Listed anew by trpcStarted when the slot held no procedures of ours: then the list is searched.
      const listed = trpcObs === ours ? ours : undefined;
      const shape = this.calls.trpcEnded(call, trpcObs, this.inFlight.has(call, listed));
      this.inFlight.delete(call, listed);
      this.httpCallEnded(call, trpcObs.cells, decideCodeNumber(call), shape);
      return;
    }
    if (this.inFlight.delete(call, ours)) obs.cells.active.value--;
    const code = decideCodeNumber(call);
    const shape = this.calls.ended(call, obs, code);
    this.httpCallEnded(call, obs.cells, code, shape);
  }

  /** What belongs to the HTTP call itself: the sidecar's share, resets, deadlines, the upstream endpoint. */
  private httpCallEnded(call: CallRecord, cells: RouteCells, code: number, shape: MethodShape): void {
    const elapsedMs = call.endTime - call.startTime;
    this.calls.overhead(call, cells, elapsedMs);
    this.resets.callEnded(call, cells);
    this.deadlines.callEnded(call, cells, code, elapsedMs);
    this.upstreams.callEnded(call, code, shape);
  }

  connectionOpened(conn: ConnectionRecord): void {
    this.connections.opened(conn);
    this.upstreams.connectionOpened(conn);
  }

  connectionClosed(conn: ConnectionRecord): void {
    this.connections.closed(conn);
    this.upstreams.connectionClosed(conn);
  }

  goaway(side: GoawaySide, code: number): void {
    this.resets.goaway(side, code);
  }

  private cellsFor(call: CallRecord): RouteCells {
    return this.routes.get(call.direction, this.route(call));
  }

  addFamilies(families: readonly MetricFamily[]): void {
    this.keepExponential(families);
    this.extraFamilies.push(...families);
  }

  /** With exponential histograms asked for, the histogram families' cells keep them from now on. */
  private keepExponential(families: readonly MetricFamily[]): void {
    if (!this.exponential) return;
    for (const f of families) if (f instanceof HistogramFamily) f.exponential = true;
  }

  /** Brings the values only read at scrape time up to date, then renders every family. */
  render(openMetrics = false): string {
    const sink = new TextSink();
    const steps = this.renderSteps(sink, openMetrics);
    while (steps.next().done !== true);
    return sink.text;
  }

  private *families(): Generator<MetricFamily> {
    yield* this.catalogue.families;
    yield* this.extraFamilies;
  }

  /**
   * Renders the exposition into `sink`, the values brought up to date first;
   * pauses after each family, where a scrape may let calls through.
   */
  private *renderSteps(sink: ExpositionSink, openMetrics: boolean): Generator<void> {
    this.refresh();
    // The resource's attributes are fixed at start: target_info was rendered once.
    sink.add(openMetrics ? this.openMetricsTargetInfo : this.targetInfo);
    for (const family of this.families()) {
      family.renderTo(sink, openMetrics);
      yield;
    }
    this.processMetrics.renderTo(sink, openMetrics);
    if (openMetrics) sink.add(OPENMETRICS_EOF);
  }

  collect(): { families: readonly MetricFamily[]; callDuration: HistogramFamily } {
    this.refresh();
    return { families: [...this.catalogue.families, ...this.extraFamilies], callDuration: this.catalogue.callDuration };
  }

  /** The values only read when someone reads them: messages of calls in flight, endpoints, faults. */
  private refresh(): void {
    this.upstreams.clearInFlight();
    this.inFlight.forEach((call, obs) => {
      if (call.framed) this.calls.countMessages(call, obs);
      this.upstreams.inFlight(call);
    });
    this.upstreams.beforeRender();
    this.faults.beforeRender();
  }
}

/**
 * A scrape's bytes: each piece encoded as it comes into chunks of CHUNK_BYTES,
 * so that a family's text is never joined into one string first.
 */
class ChunkSink implements ExpositionSink {
  private static readonly CHUNK_BYTES = 64 * 1024;
  private readonly chunks: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(ChunkSink.CHUNK_BYTES);
  private used = 0;
  bytes = 0;

  add(text: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit.
    if (this.used + text.length * 3 > this.chunk.length) {
      this.flush();
      this.chunk = Buffer.allocUnsafe(Math.max(ChunkSink.CHUNK_BYTES, text.length * 3));
    }
    const n = this.chunk.write(text, this.used);
    this.used += n;
    this.bytes += n;
  }

  finish(): Buffer[] {
    this.flush();
    return this.chunks;
  }

  private flush(): void {
    if (this.used > 0) this.chunks.push(this.chunk.subarray(0, this.used));
    this.used = 0;
  }
}

export function createMetricsObserver(opts: MetricsObserverOptions): MetricsObserver {
  return new MetricsObserverImpl(opts);
}
