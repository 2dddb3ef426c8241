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
// resource that `target_info` carries. The names and labels below are the
// public contract of docs/metrics.md: the golden tests pin them.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { TraceFlags, type SpanContext } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { CallRecord, CallReset, Direction, Encoding, Protocol } from './call-record.ts';
import { FAULT_SITES, TERMINATION_REASONS, type Faults } from './faults.ts';
import type { ConnectionRecord, GoawaySide, Observer } from './observer.ts';
import {
  CALL_DURATION_SECONDS,
  CONNECTION_CALLS,
  CONNECTION_DURATION_SECONDS,
  DEADLINE_SECONDS,
  DEADLINE_USED_RATIO,
  PAYLOAD_BYTES,
  PROXY_OVERHEAD_SECONDS,
  STREAM_DURATION_SECONDS,
} from './buckets.ts';
import { decideCodeNumber, deadlineDetection, endingReset, procedureCodeNumber } from './call-outcome.ts';
import type { DeadlineDetection } from './call-outcome.ts';
import { callShape } from './call-shape.ts';
import { DETAIL_LEVELS } from './metrics-detail.ts';
import type { DetailLevel, MetricsDetail } from './metrics-detail.ts';
import { HistogramFamily, ValueFamily } from './metric-cells.ts';
import type { HistogramCell, MetricFamily, ValueCell } from './metric-cells.ts';
import { ProcessMetrics } from './process-metrics.ts';
import { OPENMETRICS_CONTENT_TYPE, OPENMETRICS_EOF, acceptsOpenMetrics, openMetricsHeader } from './openmetrics-text.ts';
import { targetInfo } from './prometheus-text.ts';
import { http2ErrorName } from '../protocol/reset-codes.ts';
import { GrpcCode, grpcCodeName } from '../protocol/status-codes.ts';
import { MethodGuard, OTHER } from '../route/method-guard.ts';
import type { OperationMap } from '../route/operation-map.ts';
import type { MethodShape, ProtoCatalog } from '../route/proto-catalog.ts';
import type { RestRoute } from '../route/route-template.ts';
import { Router } from '../route/router.ts';
import { LoadSkew } from './load-skew.ts';
import type { Route } from '../route/router.ts';

export interface MetricsObserverOptions {
  /** Distinct `method` labels per protocol (--max-methods). */
  maxMethods: number;
  /** REST routes from the routes file or OpenAPI document (route/route-file.ts). */
  routes?: readonly RestRoute[];
  /** The operations file (route/operation-map.ts). */
  operations?: OperationMap;
  /** What the .proto files say (route/proto-catalog.ts). */
  protos?: ProtoCatalog;
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
}

export interface MetricsObserver extends Observer {
  /** Serves the exposition, OpenMetrics if the Accept header asks for it; mount it on the admin port's /metrics. */
  handleMetrics(req: IncomingMessage, res: ServerResponse): void;
  /** The exposition text /metrics serves, Prometheus or OpenMetrics. */
  render(openMetrics?: boolean): string;
  /** Families kept elsewhere (the translation metrics), served in the same exposition after the call metrics. */
  addFamilies(render: (openMetrics: boolean) => string): void;
  /** The route, hence the `method` and `operation` labels, a call has in these metrics. */
  route(call: CallRecord): Route;
  shutdown(): Promise<void>;
}

/**
 * Per-endpoint series outlive the endpoints (pods come and go) by
 * --endpoint-series-ttl; past this many at once the rest share `upstream="_OTHER"`
 * until departed endpoints' series are dropped and make room.
 */
const MAX_UPSTREAMS = 1000;

/** The text format's media type (https://prometheus.io/docs/instrumenting/exposition_formats/#basic-info). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const ENCODING_INDEX: Readonly<Record<Encoding, number>> = { proto: 0, json: 1, text: 2, other: 3 };

type StreamType = Exclude<MethodShape, 'unary'>;

/** Series of one (direction, protocol, encoding, method). */
class EncodingCells {
  /** By `code * 1000 + http_status`. */
  readonly calls = new Map<number, ValueCell>();
  /** By gRPC code where the level labels durations by code; else the one cell is at 0. */
  readonly durations: (HistogramCell | undefined)[] = [];
  constructor(
    readonly encoding: Encoding,
    readonly requestBytes: ValueCell,
    readonly responseBytes: ValueCell,
    /** The size distributions, at the full level only. */
    readonly requestSizes: HistogramCell | undefined,
    readonly responseSizes: HistogramCell | undefined,
  ) {}
}

/** Series of one (direction, protocol, method), bound when the route is first seen in that direction. */
class RouteCells {
  readonly encodings: (EncodingCells | undefined)[] = [undefined, undefined, undefined, undefined];
  readonly streams: Partial<Record<StreamType, HistogramCell>> = {};
  firstMessage: HistogramCell | undefined;
  requestMessages: ValueCell | undefined;
  responseMessages: ValueCell | undefined;
  /** By `side error_code`. */
  readonly resets = new Map<string, ValueCell>();
  deadlineRequested: HistogramCell | undefined;
  deadlineUsed: HistogramCell | undefined;
  withoutDeadline: ValueCell | undefined;
  readonly deadlineExceeded: Partial<Record<DeadlineDetection, ValueCell>> = {};
  constructor(readonly direction: Direction, readonly route: Route, readonly active: ValueCell, readonly perProtocol: ProtocolCells) {}
}

/** Per-call state between callStarted and callEnded. */
class CallObservation {
  /** Messages already added to the counters (counted on the fly at each scrape, the rest at the end). */
  requestMessages = 0;
  responseMessages = 0;
  /** tRPC: the cells of each procedure the call carries, in path order (cells is the first's). */
  procedures: RouteCells[] | undefined;
  constructor(readonly cells: RouteCells) {}
}

interface ProtocolCells {
  overhead: HistogramCell | undefined;
  deadlineInvalid: ValueCell | undefined;
}

interface ConnectionCells {
  active: ValueCell;
  duration: HistogramCell;
  calls: HistogramCell;
}

interface UpstreamCells {
  /** By gRPC code. */
  calls: (ValueCell | undefined)[];
  active: ValueCell;
  duration: HistogramCell;
  connections: ValueCell;
  /** When a scrape first found the endpoint gone (unknown, nothing open on it); undefined while it is not. */
  goneSince?: number;
}

class MetricsObserverImpl implements MetricsObserver {
  // Families in docs/metrics.md order, which is the exposition's order.
  private readonly callsTotal = new ValueFamily('rpcscope_calls_total', 'Finished calls, unary or streaming.', 'counter');
  private readonly callsActive = new ValueFamily('rpcscope_calls_active', 'Calls and streams in flight.', 'gauge');
  private readonly callDuration: HistogramFamily;
  private readonly callBytes = new ValueFamily('rpcscope_call_bytes_total', 'Body bytes of finished calls, by flow.', 'counter');
  private readonly payload = new HistogramFamily('rpcscope_payload_bytes', 'Body bytes of one call, by flow.', PAYLOAD_BYTES);
  private readonly overhead = new HistogramFamily('rpcscope_proxy_overhead_seconds', 'Time the sidecar added to a call: its duration less the upstream part.', PROXY_OVERHEAD_SECONDS);
  private readonly streamDuration = new HistogramFamily('rpcscope_stream_duration_seconds', 'Lifetime of streaming calls.', STREAM_DURATION_SECONDS);
  private readonly firstMessage = new HistogramFamily('rpcscope_stream_first_message_seconds', 'Time from request headers to the first response message of a streaming call.', CALL_DURATION_SECONDS);
  private readonly messages = new ValueFamily('rpcscope_messages_total', 'Length-prefixed messages, by flow.', 'counter');
  private readonly resets = new ValueFamily('rpcscope_stream_resets_total', 'RST_STREAM frames (and HTTP/1.1 connections closed mid-call), by sender and error code.', 'counter');
  private readonly goaways = new ValueFamily('rpcscope_http2_goaways_total', 'GOAWAY frames received or sent, by side and error code.', 'counter');
  private readonly deadlineRequested = new HistogramFamily('rpcscope_deadline_requested_seconds', 'Deadline budgets callers asked for.', DEADLINE_SECONDS);
  private readonly deadlineExceeded = new ValueFamily('rpcscope_deadline_exceeded_total', 'Calls that did not finish inside their deadline, by who noticed.', 'counter');
  private readonly deadlineUsed = new HistogramFamily('rpcscope_deadline_used_ratio', 'Elapsed over requested time at the end of calls that carried a deadline.', DEADLINE_USED_RATIO);
  private readonly withoutDeadline = new ValueFamily('rpcscope_calls_without_deadline_total', 'gRPC-family calls that carried no deadline.', 'counter');
  private readonly deadlineInvalid = new ValueFamily('rpcscope_deadline_header_invalid_total', 'Calls whose deadline header could not be parsed.', 'counter');
  private readonly connectionsActive = new ValueFamily('rpcscope_connections_active', 'Open connections.', 'gauge');
  private readonly connectionDuration = new HistogramFamily('rpcscope_connection_duration_seconds', 'Lifetime of closed connections.', CONNECTION_DURATION_SECONDS);
  private readonly connectionCalls = new HistogramFamily('rpcscope_connection_calls', 'Calls carried by each closed connection.', CONNECTION_CALLS);
  private readonly upstreamCalls = new ValueFamily('rpcscope_upstream_calls_total', 'Calls sent to each upstream endpoint.', 'counter');
  private readonly upstreamActive = new ValueFamily('rpcscope_upstream_calls_active', 'Calls in flight per upstream endpoint.', 'gauge');
  private readonly upstreamDuration = new HistogramFamily('rpcscope_upstream_call_duration_seconds', 'Latency of unary-shaped calls per upstream endpoint, from request sent to response end received.', CALL_DURATION_SECONDS);
  private readonly upstreamConnections = new ValueFamily('rpcscope_upstream_connections_active', 'Open connections per upstream endpoint.', 'gauge');
  private readonly upstreamEndpoints = new ValueFamily('rpcscope_upstream_endpoints', 'Endpoints currently known for the upstream.', 'gauge');
  private readonly loadSkewRatio = new ValueFamily('rpcscope_load_skew_ratio', 'Max / mean of the per-endpoint call rate over the last 30 s, idle endpoints counting as 0.', 'gauge');
  private readonly internalErrors = new ValueFamily('rpcscope_internal_errors_total', 'Exceptions raised while handling one connection or call, contained there; the sidecar kept serving.', 'counter');
  private readonly connectionsTerminated = new ValueFamily('rpcscope_connections_terminated_total', 'Client connections the sidecar ended itself, by reason.', 'counter');
  private readonly queueOverflows = new ValueFamily('rpcscope_upstream_queue_overflow_total', 'Calls answered UNAVAILABLE (503) because their endpoint\'s HTTP/1.1 connections and queue were full.', 'counter');
  private readonly queueOverflowCell = this.queueOverflows.cell({});
  /** Every known `where` and `reason` from the start, at 0: an alert on increase() needs the series before the first fault. */
  private readonly internalErrorCells = new Map(FAULT_SITES.map((where) => [where, this.internalErrors.cell({ where })]));
  private readonly terminatedCells = new Map(TERMINATION_REASONS.map((reason) => [reason, this.connectionsTerminated.cell({ reason })]));
  private readonly faults: Faults | undefined;
  private readonly extraFamilies: ((openMetrics: boolean) => string)[] = [];
  private readonly endpointsCell = this.upstreamEndpoints.cell({});
  private readonly skewCell = this.loadSkewRatio.cell({});
  private readonly skew = new LoadSkew();
  private readonly knownEndpoints: () => readonly string[];
  private readonly endpointSeriesTtlMs: number;
  private readonly clock: () => number;
  private readonly families: MetricFamily[];

  private readonly router: Router;
  private readonly routeCells: Record<Direction, Map<Route, RouteCells>> = { inbound: new Map(), outbound: new Map() };
  private readonly protocolCells = new Map<string, ProtocolCells>();
  private readonly connectionCells = new Map<string, ConnectionCells>();
  private readonly goawayCells = new Map<string, ValueCell>();
  private readonly upstreamGuard = new MethodGuard(MAX_UPSTREAMS);
  private readonly upstreamCells = new Map<string, UpstreamCells>();
  /** Calls in flight: their message counts and endpoints are read at each scrape. */
  private readonly inFlight = new Set<CallRecord>();
  private readonly processMetrics: ProcessMetrics;
  private readonly targetInfo: string;
  private readonly openMetricsTargetInfo: string;
  private readonly level: DetailLevel;
  private readonly spanOf: ((call: CallRecord) => SpanContext | undefined) | undefined;
  private readonly timeOrigin: number;

  constructor(opts: MetricsObserverOptions) {
    this.level = DETAIL_LEVELS[opts.detail ?? 'standard'];
    this.callDuration = new HistogramFamily('rpcscope_call_duration_seconds', 'Duration of unary-shaped calls, from request headers received to response end sent.', this.level.durationBuckets);
    this.families = [
      this.callsTotal, this.callsActive, this.callDuration, this.callBytes, this.payload, this.overhead,
      this.streamDuration, this.firstMessage, this.messages,
      this.resets, this.goaways,
      this.deadlineRequested, this.deadlineExceeded, this.deadlineUsed, this.withoutDeadline, this.deadlineInvalid,
      this.connectionsActive, this.connectionDuration, this.connectionCalls,
      this.upstreamCalls, this.upstreamActive, this.upstreamDuration, this.upstreamConnections, this.upstreamEndpoints, this.loadSkewRatio,
      this.internalErrors, this.connectionsTerminated, this.queueOverflows,
    ];
    this.router = new Router(opts);
    this.knownEndpoints = opts.knownEndpoints ?? (() => [...this.upstreamCells.keys()]);
    this.endpointSeriesTtlMs = opts.endpointSeriesTtlMs ?? 0;
    this.clock = opts.clock ?? Date.now;
    this.faults = opts.faults;
    const env = opts.env ?? process.env;
    const resource = resourceFromAttributes({
      [ATTR_SERVICE_NAME]: opts.serviceName ?? 'rpcscope',
      // Kubernetes resource semantic conventions; absent outside a pod.
      ...(env.POD_NAME ? { 'k8s.pod.name': env.POD_NAME } : {}),
      ...(env.POD_NAMESPACE ? { 'k8s.namespace.name': env.POD_NAMESPACE } : {}),
    });
    this.targetInfo = targetInfo(resource.attributes);
    this.openMetricsTargetInfo = targetInfo(resource.attributes, openMetricsHeader);
    this.spanOf = opts.spanOf;
    this.timeOrigin = opts.timeOrigin ?? performance.timeOrigin;
    this.processMetrics = new ProcessMetrics(env);
  }

  handleMetrics(req: IncomingMessage, res: ServerResponse): void {
    const openMetrics = acceptsOpenMetrics(req.headers.accept);
    let body: string;
    try {
      body = this.render(openMetrics);
    } catch (err) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(`# failed to render metrics: ${(err as Error).message}\n`);
      return;
    }
    res.writeHead(200, { 'content-type': openMetrics ? OPENMETRICS_CONTENT_TYPE : CONTENT_TYPE, 'content-length': Buffer.byteLength(body) }).end(body);
  }

  async shutdown(): Promise<void> {
    this.processMetrics.stop();
  }

  route(call: CallRecord): Route {
    // A tRPC call is routed by its (first) procedure: the access log's one line per HTTP call.
    if (call.trpc) return this.router.resolveProcedure(call.trpc.procedures[0]!.path);
    return this.router.resolve(call.protocol, call.httpMethod, call.path);
  }

  callStarted(call: CallRecord): void {
    if (call.trpc) {
      this.trpcStarted(call);
      return;
    }
    const cells = this.cellsFor(call);
    cells.active.value++;
    call.observation = new CallObservation(cells);
    this.inFlight.add(call);
  }

  /** Each procedure of a tRPC call is in flight, a batch of N counting N. */
  private trpcStarted(call: CallRecord): CallObservation {
    const procedures = call.trpc!.procedures.map((p) => this.routeCellsFor(call.direction, this.router.resolveProcedure(p.path)));
    for (const cells of procedures) cells.active.value++;
    const obs = new CallObservation(procedures[0]!);
    obs.procedures = procedures;
    call.observation = obs;
    this.inFlight.add(call);
    return obs;
  }

  /**
   * A tRPC call ends as N procedure calls (calls, bytes, latency, each with its
   * own outcome) carried by one HTTP call (proxy overhead, resets, the upstream
   * endpoint's counts), as docs/metrics.md "tRPC" sets out.
   */
  private trpcEnded(call: CallRecord, obs: CallObservation): void {
    const trpc = call.trpc!;
    const procedures = obs.procedures!;
    const n = procedures.length;
    const shape = callShape(call, undefined);
    for (let i = 0; i < n; i++) {
      const cells = procedures[i]!;
      const p = trpc.procedures[i]!;
      if (this.inFlight.has(call)) cells.active.value--;
      const code = procedureCodeNumber(call, p);
      const enc = this.encodingCells(cells, call.encoding);
      (enc.calls.get(code * 1000 + call.httpStatus) ?? this.newCallCell(cells, enc, code, call.httpStatus)).value++;
      // One body carries every procedure's part: shared out evenly, the remainder to the first.
      const req = share(call.requestBytes, n, i);
      const resp = share(call.responseBytes, n, i);
      enc.requestBytes.value += req;
      enc.responseBytes.value += resp;
      enc.requestSizes?.record(req);
      enc.responseSizes?.record(resp);
      const seconds = ((p.settledTime ?? call.endTime) - call.startTime) / 1000;
      if (shape === 'unary') {
        const slot = this.level.durationByCode ? code : 0;
        const cell = enc.durations[slot] ?? this.newDurationCell(cells, enc, code, slot);
        this.exemplar(cell, cell.record(seconds), seconds, call);
      } else {
        (cells.streams[shape as StreamType] ?? this.newStreamCell(cells, shape as StreamType)).record(seconds);
      }
    }
    this.inFlight.delete(call);
    this.httpCallEnded(call, obs.cells, decideCodeNumber(call), shape, call.endTime - call.startTime);
  }

  callEnded(call: CallRecord): void {
    const started = call.observation;
    let obs: CallObservation;
    if (started instanceof CallObservation) {
      obs = started;
    } else {
      // The slot holds no state of ours: the call started before this observer
      // did, or another observer took the slot. Resolving the route again gives
      // the same cells (a route, once admitted, stays admitted).
      obs = new CallObservation(this.cellsFor(call));
    }
    call.observation = undefined;
    if (call.trpc) return this.trpcEnded(call, obs.procedures ? obs : this.trpcStarted(call));
    if (this.inFlight.delete(call)) obs.cells.active.value--;
    const cells = obs.cells;
    const code = decideCodeNumber(call);
    const enc = this.encodingCells(cells, call.encoding);
    const callKey = code * 1000 + call.httpStatus;
    (enc.calls.get(callKey) ?? this.newCallCell(cells, enc, code, call.httpStatus)).value++;
    enc.requestBytes.value += call.requestBytes;
    enc.responseBytes.value += call.responseBytes;
    enc.requestSizes?.record(call.requestBytes);
    enc.responseSizes?.record(call.responseBytes);

    const elapsedMs = call.endTime - call.startTime;
    const shape = callShape(call, cells.route.shape);
    if (shape === 'unary') {
      const slot = this.level.durationByCode ? code : 0;
      const cell = enc.durations[slot] ?? this.newDurationCell(cells, enc, code, slot);
      const seconds = elapsedMs / 1000;
      this.exemplar(cell, cell.record(seconds), seconds, call);
    } else {
      (cells.streams[shape] ?? this.newStreamCell(cells, shape)).record(elapsedMs / 1000);
      if (call.firstResponseMessageTime !== undefined) {
        (cells.firstMessage ??= this.firstMessage.cell(routeLabels(cells))).record((call.firstResponseMessageTime - call.startTime) / 1000);
      }
    }
    if (call.framed) this.countMessages(call, obs);
    this.httpCallEnded(call, cells, code, shape, elapsedMs);
  }

  /**
   * The call's trace becomes its latency bucket's exemplar when tracing is on,
   * the span sampled, and the bucket's last exemplar a second old: otherwise a
   * comparison, no lookup, no allocation.
   */
  private exemplar(cell: HistogramCell, bucket: number, seconds: number, call: CallRecord): void {
    const spanOf = this.spanOf;
    if (spanOf === undefined) return;
    const at = this.timeOrigin + call.endTime;
    if (!cell.exemplarDue(bucket, at)) return;
    const span = spanOf(call);
    if (span !== undefined && (span.traceFlags & TraceFlags.SAMPLED) !== 0) cell.setExemplar(bucket, span.traceId, span.spanId, seconds, at);
  }

  /** What belongs to the HTTP call itself: the sidecar's share, resets, deadlines, the upstream endpoint. */
  private httpCallEnded(call: CallRecord, cells: RouteCells, code: number, shape: MethodShape, elapsedMs: number): void {
    if (call.upstreamStartTime !== undefined && call.upstreamEndTime !== undefined) {
      const upstreamMs = call.upstreamEndTime - call.upstreamStartTime;
      const pc = cells.perProtocol;
      (pc.overhead ??= this.overhead.cell({ direction: call.direction, protocol: call.protocol })).record(Math.max(0, elapsedMs - upstreamMs) / 1000);
    }

    const reset = endingReset(call);
    if (reset !== undefined) this.resetCell(cells, reset).value++;

    this.observeDeadline(call, cells, code, elapsedMs);

    if (call.upstream !== '') {
      const up = this.upstreamCellsFor(call.upstream);
      this.skew.record(call.upstream);
      (up.calls[code] ?? this.newUpstreamCallCell(up, code)).value++;
      if (shape === 'unary' && call.upstreamStartTime !== undefined) {
        up.duration.record(((call.upstreamEndTime ?? call.endTime) - call.upstreamStartTime) / 1000);
      }
    }
  }

  connectionOpened(conn: ConnectionRecord): void {
    this.connectionCellsFor(conn).active.value++;
    if (conn.side === 'upstream') this.upstreamCellsFor(conn.peer).connections.value++;
  }

  connectionClosed(conn: ConnectionRecord): void {
    const cells = this.connectionCellsFor(conn);
    cells.active.value--;
    cells.duration.record((conn.closeTime - conn.openTime) / 1000);
    cells.calls.record(conn.calls);
    if (conn.side === 'upstream') this.upstreamCellsFor(conn.peer).connections.value--;
  }

  goaway(side: GoawaySide, code: number): void {
    const errorCode = http2ErrorName(code);
    const key = `${side} ${errorCode}`;
    let cell = this.goawayCells.get(key);
    if (cell === undefined) this.goawayCells.set(key, (cell = this.goaways.cell({ side, error_code: errorCode })));
    cell.value++;
  }

  private cellsFor(call: CallRecord): RouteCells {
    return this.routeCellsFor(call.direction, this.route(call));
  }

  private routeCellsFor(direction: Direction, route: Route): RouteCells {
    const byRoute = this.routeCells[direction];
    let cells = byRoute.get(route);
    if (cells === undefined) {
      const active = this.callsActive.cell({ direction, protocol: route.protocol, method: route.method });
      byRoute.set(route, (cells = new RouteCells(direction, route, active, this.protocolCellsFor(direction, route.protocol))));
    }
    return cells;
  }

  private encodingCells(cells: RouteCells, encoding: Encoding): EncodingCells {
    const i = ENCODING_INDEX[encoding];
    let enc = cells.encodings[i];
    if (enc === undefined) {
      const { direction, route } = cells;
      const base = { direction, protocol: route.protocol, encoding, method: route.method, operation: route.operation };
      const sizes = this.level.payloadDistribution;
      enc = new EncodingCells(
        encoding,
        this.callBytes.cell({ ...base, flow: 'request' }),
        this.callBytes.cell({ ...base, flow: 'response' }),
        sizes ? this.payload.cell({ ...base, flow: 'request' }) : undefined,
        sizes ? this.payload.cell({ ...base, flow: 'response' }) : undefined,
      );
      cells.encodings[i] = enc;
    }
    return enc;
  }

  private newCallCell(cells: RouteCells, enc: EncodingCells, code: number, httpStatus: number): ValueCell {
    const cell = this.callsTotal.cell({
      ...encodingLabels(cells, enc),
      code: grpcCodeName(code),
      http_status: httpStatus === 0 ? '' : String(httpStatus),
    });
    enc.calls.set(code * 1000 + httpStatus, cell);
    return cell;
  }

  private newDurationCell(cells: RouteCells, enc: EncodingCells, code: number, slot: number): HistogramCell {
    const labels = encodingLabels(cells, enc);
    const cell = this.callDuration.cell(this.level.durationByCode ? { ...labels, code: grpcCodeName(code) } : labels);
    enc.durations[slot] = cell;
    return cell;
  }

  private newStreamCell(cells: RouteCells, shape: StreamType): HistogramCell {
    const cell = this.streamDuration.cell({ ...routeLabels(cells), stream_type: shape });
    cells.streams[shape] = cell;
    return cell;
  }

  private countMessages(call: CallRecord, obs: CallObservation): void {
    const cells = obs.cells;
    const req = call.requestMessages - obs.requestMessages;
    const resp = call.responseMessages - obs.responseMessages;
    if (req === 0 && resp === 0) return;
    cells.requestMessages ??= this.messages.cell({ ...routeLabels(cells), flow: 'request' });
    cells.responseMessages ??= this.messages.cell({ ...routeLabels(cells), flow: 'response' });
    cells.requestMessages.value += req;
    cells.responseMessages.value += resp;
    obs.requestMessages = call.requestMessages;
    obs.responseMessages = call.responseMessages;
  }

  private resetCell(cells: RouteCells, reset: CallReset): ValueCell {
    const errorCode = http2ErrorName(reset.code);
    const key = `${reset.side} ${errorCode}`;
    let cell = cells.resets.get(key);
    if (cell === undefined) cells.resets.set(key, (cell = this.resets.cell({ ...routeLabels(cells), side: reset.side, error_code: errorCode })));
    return cell;
  }

  private observeDeadline(call: CallRecord, cells: RouteCells, code: number, elapsedMs: number): void {
    const deadline = call.deadline;
    const ms = deadline?.ms;
    if (ms !== undefined) {
      (cells.deadlineRequested ??= this.deadlineRequested.cell(routeLabels(cells))).record(ms / 1000);
      // A zero budget has no ratio; it is spent before the call starts and shows as a miss.
      if (ms > 0) (cells.deadlineUsed ??= this.deadlineUsed.cell(routeLabels(cells))).record(elapsedMs / ms);
    } else {
      if (deadline !== undefined) {
        const pc = cells.perProtocol;
        (pc.deadlineInvalid ??= this.deadlineInvalid.cell({ direction: call.direction, protocol: call.protocol })).value++;
      }
      // An unparsable header is proxied as if absent, so the call counts as carrying none.
      if (call.protocol !== 'rest' && call.protocol !== 'trpc') (cells.withoutDeadline ??= this.withoutDeadline.cell(routeLabels(cells))).value++;
    }
    if (code === GrpcCode.DEADLINE_EXCEEDED) {
      const by = deadlineDetection(call);
      if (by !== undefined) (cells.deadlineExceeded[by] ??= this.deadlineExceeded.cell({ ...routeLabels(cells), detected_by: by })).value++;
    }
  }

  private protocolCellsFor(direction: Direction, protocol: Protocol): ProtocolCells {
    const key = `${direction} ${protocol}`;
    let cells = this.protocolCells.get(key);
    if (cells === undefined) this.protocolCells.set(key, (cells = { overhead: undefined, deadlineInvalid: undefined }));
    return cells;
  }

  private connectionCellsFor(conn: ConnectionRecord): ConnectionCells {
    const key = `${conn.side} ${conn.httpVersion}`;
    let cells = this.connectionCells.get(key);
    if (cells === undefined) {
      const labels = { side: conn.side, http_version: conn.httpVersion };
      cells = {
        active: this.connectionsActive.cell(labels),
        duration: this.connectionDuration.cell(labels),
        calls: this.connectionCalls.cell(labels),
      };
      this.connectionCells.set(key, cells);
    }
    return cells;
  }

  private upstreamCellsFor(endpoint: string): UpstreamCells {
    const known = this.upstreamCells.get(endpoint);
    if (known !== undefined) return known;
    // Endpoints past the cap are not remembered one by one: they all find the cells of `_OTHER`.
    const upstream = this.upstreamGuard.admit(endpoint);
    let cells = this.upstreamCells.get(upstream);
    if (cells === undefined) {
      cells = { calls: [], active: this.upstreamActive.cell({ upstream }), duration: this.upstreamDuration.cell({ upstream }), connections: this.upstreamConnections.cell({ upstream }) };
      this.upstreamCells.set(upstream, cells);
    }
    return cells;
  }

  /**
   * Drops the series of endpoints that left: no longer known, with no connection or
   * call on them, since a scrape at least --endpoint-series-ttl ago. That scrape and
   * any between exported their last values; the room they held under MAX_UPSTREAMS
   * goes to new endpoints. `_OTHER` stays.
   */
  private pruneDeparted(known: readonly string[]): void {
    const now = this.clock();
    const knownSet = new Set(known);
    for (const [endpoint, cells] of this.upstreamCells) {
      if (endpoint === OTHER || knownSet.has(endpoint) || cells.active.value > 0 || cells.connections.value > 0) {
        cells.goneSince = undefined;
        continue;
      }
      cells.goneSince ??= now;
      if (now - cells.goneSince < this.endpointSeriesTtlMs) continue;
      for (const c of cells.calls) if (c) this.upstreamCalls.remove(c);
      this.upstreamActive.remove(cells.active);
      this.upstreamDuration.remove(cells.duration);
      this.upstreamConnections.remove(cells.connections);
      this.upstreamCells.delete(endpoint);
      this.upstreamGuard.forget(endpoint);
    }
  }

  private newUpstreamCallCell(up: UpstreamCells, code: number): ValueCell {
    const cell = this.upstreamCalls.cell({ upstream: up.active.attributes.upstream as string, code: grpcCodeName(code) });
    up.calls[code] = cell;
    return cell;
  }

  /** Brings the values only read at scrape time up to date, then renders every family. */
  addFamilies(render: (openMetrics: boolean) => string): void {
    this.extraFamilies.push(render);
  }

  render(openMetrics = false): string {
    for (const cells of this.upstreamCells.values()) cells.active.value = 0;
    for (const call of this.inFlight) {
      const obs = call.observation;
      if (call.framed && obs instanceof CallObservation) this.countMessages(call, obs);
      if (call.upstream !== '') this.upstreamCellsFor(call.upstream).active.value++;
    }
    const known = this.knownEndpoints();
    if (this.endpointSeriesTtlMs > 0) this.pruneDeparted(known);
    this.endpointsCell.value = known.length;
    this.skewCell.value = this.skew.ratio(known);
    if (this.faults) {
      for (const [where, site] of this.faults.internalErrors()) this.internalErrorCells.get(where)!.value = site.count;
      for (const [reason, n] of this.faults.terminated()) this.terminatedCells.get(reason)!.value = n;
      this.queueOverflowCell.value = this.faults.upstreamQueueOverflows();
    }
    // The resource's attributes are fixed at start: target_info was rendered once.
    let out = openMetrics ? this.openMetricsTargetInfo : this.targetInfo;
    for (const family of this.families) out += family.render(openMetrics);
    for (const extra of this.extraFamilies) out += extra(openMetrics);
    out += this.processMetrics.render(openMetrics);
    return openMetrics ? out + OPENMETRICS_EOF : out;
  }
}

function share(total: number, n: number, i: number): number {
  const each = Math.floor(total / n);
  return i === 0 ? total - each * (n - 1) : each;
}

function routeLabels(cells: RouteCells): { direction: Direction; protocol: Protocol; method: string } {
  return { direction: cells.direction, protocol: cells.route.protocol, method: cells.route.method };
}

function encodingLabels(cells: RouteCells, enc: EncodingCells) {
  return { direction: cells.direction, protocol: cells.route.protocol, encoding: enc.encoding, method: cells.route.method, operation: cells.route.operation };
}

export function createMetricsObserver(opts: MetricsObserverOptions): MetricsObserver {
  return new MetricsObserverImpl(opts);
}
