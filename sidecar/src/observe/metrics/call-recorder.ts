// Calls and streams: rpcscope_calls_total and _active, the call duration (with
// trace exemplars), body bytes and payload sizes, the proxy overhead, stream
// lifetimes and first messages, and message counts; a tRPC call counted as the
// procedures it carries (docs/metrics.md "tRPC").
import type { SpanContext } from '@opentelemetry/api';
import type { Encoding } from '../../protocol/vocabulary.ts';
import { grpcCodeName } from '../../protocol/status-codes.ts';
import type { MethodShape } from '../../route/proto-catalog.ts';
import { procedureCodeNumber } from '../../call/call-outcome.ts';
import type { CallRecord } from '../../call/call-record.ts';
import type { InFlightEntry } from './in-flight.ts';
import { callShape } from '../call-shape.ts';
import type { DetailLevel } from '../metrics-detail.ts';
import type { HistogramCell } from '../metric-cells.ts';
import type { MetricCatalogue } from './catalogue.ts';
import { ENCODING_INDEX, EncodingCells, StatusCells, encodingLabels, routeLabels, type RouteCells, type StreamType } from './route-cells.ts';

/** W3C trace-flags bit 0: the caller sampled the trace (OpenTelemetry's TraceFlags.SAMPLED). */
const SAMPLED = 0x01;

/** Per-call state between callStarted and callEnded. */
export class CallObservation implements InFlightEntry<CallObservation> {
  /** Messages already added to the counters (counted on the fly at each scrape, the rest at the end). */
  requestMessages = 0;
  responseMessages = 0;
  /** tRPC: the cells of each procedure the call carries, in path order (cells is the first's). */
  procedures: RouteCells[] | undefined;
  /** While the call is in flight: the call, the list of calls in flight it is on, and its neighbours there (in-flight.ts). */
  call: CallRecord | undefined = undefined;
  list: object | undefined = undefined;
  prev: CallObservation | undefined = undefined;
  next: CallObservation | undefined = undefined;
  constructor(readonly cells: RouteCells) {}
}

export class CallRecorder {
  constructor(
    private readonly catalogue: MetricCatalogue,
    private readonly level: DetailLevel,
    /** With tracing on, the span of a call: its trace becomes the exemplar of the call's latency bucket. */
    private readonly spanOf: ((call: CallRecord) => SpanContext | undefined) | undefined,
    /** Unix milliseconds at performance.now() = 0, which dates the exemplars. */
    private readonly timeOrigin: number,
  ) {}

  /** A call (not tRPC) ended: its count, bytes, and duration or stream lifetime; returns its shape. */
  ended(call: CallRecord, obs: CallObservation, code: number): MethodShape {
    const cells = obs.cells;
    const enc = this.encodingCells(cells, call.encoding);
    const status = enc.statuses.get(code * 1000 + call.httpStatus) ?? this.newStatusCells(cells, enc, code, call.httpStatus);
    status.calls.value++;
    status.protocolCalls.value++;
    enc.requestBytes.value += call.requestBytes;
    enc.responseBytes.value += call.responseBytes;
    enc.requestSizes?.record(call.requestBytes);
    enc.responseSizes?.record(call.responseBytes);

    const elapsedMs = call.endTime - call.startTime;
    const shape = callShape(call, cells.route.shape);
    if (shape === 'unary') {
      const cell = status.duration ?? this.newDurationPart(cells, enc, status, code, call.httpStatus);
      const seconds = elapsedMs / 1000;
      this.exemplar(cell, cell.record(seconds), seconds, call);
    } else {
      (cells.streams[shape] ?? this.newStreamCell(cells, shape)).record(elapsedMs / 1000);
      if (call.firstResponseMessageTime !== undefined) {
        (cells.firstMessage ??= this.catalogue.firstMessage.cell(routeLabels(cells))).record((call.firstResponseMessageTime - call.startTime) / 1000);
      }
    }
    if (call.framed) this.countMessages(call, obs);
    return shape;
  }

  /**
   * A tRPC call ended as N procedure calls (calls, bytes, latency, each with its
   * own outcome); `inFlight` says whether their calls_active still count it.
   * Returns the HTTP call's shape.
   */
  trpcEnded(call: CallRecord, obs: CallObservation, inFlight: boolean): MethodShape {
    const trpc = call.trpc!;
    const procedures = obs.procedures!;
    const n = procedures.length;
    const shape = callShape(call, undefined);
    for (let i = 0; i < n; i++) {
      const cells = procedures[i]!;
      const p = trpc.procedures[i]!;
      if (inFlight) cells.active.value--;
      const code = procedureCodeNumber(call, p);
      const enc = this.encodingCells(cells, call.encoding);
      const status = enc.statuses.get(code * 1000 + call.httpStatus) ?? this.newStatusCells(cells, enc, code, call.httpStatus);
      status.calls.value++;
      status.protocolCalls.value++;
      // One body carries every procedure's part: shared out evenly, the remainder to the first.
      const req = share(call.requestBytes, n, i);
      const resp = share(call.responseBytes, n, i);
      enc.requestBytes.value += req;
      enc.responseBytes.value += resp;
      enc.requestSizes?.record(req);
      enc.responseSizes?.record(resp);
      const seconds = ((p.settledTime ?? call.endTime) - call.startTime) / 1000;
      if (shape === 'unary') {
        const cell = status.duration ?? this.newDurationPart(cells, enc, status, code, call.httpStatus);
        this.exemplar(cell, cell.record(seconds), seconds, call);
      } else {
        (cells.streams[shape as StreamType] ?? this.newStreamCell(cells, shape as StreamType)).record(seconds);
      }
    }
    return shape;
  }

  /** The sidecar's share of the call: its duration less the upstream's part. */
  overhead(call: CallRecord, cells: RouteCells, elapsedMs: number): void {
    if (call.upstreamStartTime === undefined || call.upstreamEndTime === undefined) return;
    const upstreamMs = call.upstreamEndTime - call.upstreamStartTime;
    const pc = cells.perProtocol;
    (pc.overhead ??= this.catalogue.overhead.cell({ direction: call.direction, protocol: call.protocol })).record(Math.max(0, elapsedMs - upstreamMs) / 1000);
  }

  /** Adds the messages seen since the last count (at a scrape, for calls in flight, and at the end). */
  countMessages(call: CallRecord, obs: CallObservation): void {
    const cells = obs.cells;
    const req = call.requestMessages - obs.requestMessages;
    const resp = call.responseMessages - obs.responseMessages;
    if (req === 0 && resp === 0) return;
    cells.requestMessages ??= this.catalogue.messages.cell({ ...routeLabels(cells), flow: 'request' });
    cells.responseMessages ??= this.catalogue.messages.cell({ ...routeLabels(cells), flow: 'response' });
    cells.requestMessages.value += req;
    cells.responseMessages.value += resp;
    obs.requestMessages = call.requestMessages;
    obs.responseMessages = call.responseMessages;
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
    if (span !== undefined && (span.traceFlags & SAMPLED) !== 0) cell.setExemplar(bucket, span.traceId, span.spanId, seconds, at);
  }

  private encodingCells(cells: RouteCells, encoding: Encoding): EncodingCells {
    const i = ENCODING_INDEX[encoding];
    let enc = cells.encodings[i];
    if (enc === undefined) {
      const { direction, route } = cells;
      const base = { direction, protocol: route.protocol, encoding, method: route.method, operation: route.operation };
      const sizes = this.level.payloadDistribution;
      const { callBytes, payload } = this.catalogue;
      enc = new EncodingCells(
        encoding,
        callBytes.cell({ ...base, flow: 'request' }),
        callBytes.cell({ ...base, flow: 'response' }),
        sizes ? payload.cell({ ...base, flow: 'request' }) : undefined,
        sizes ? payload.cell({ ...base, flow: 'response' }) : undefined,
      );
      cells.encodings[i] = enc;
    }
    return enc;
  }

  private newStatusCells(cells: RouteCells, enc: EncodingCells, code: number, httpStatus: number): StatusCells {
    const perProtocol = cells.perProtocol.calls;
    const status = new StatusCells(
      this.catalogue.callsTotal.cell({
        ...encodingLabels(cells, enc),
        code: grpcCodeName(code),
        http_status: httpStatus === 0 ? '' : String(httpStatus),
      }),
      (perProtocol[code] ??= this.catalogue.protocolCalls.cell({ direction: cells.direction, protocol: cells.route.protocol, code: grpcCodeName(code) })),
    );
    enc.statuses.set(code * 1000 + httpStatus, status);
    return status;
  }

  /**
   * The latency part of one outcome, under the series /metrics serves for it
   * (one per method, or per code at the full level): every level keeps the
   * latency by status, which OTLP's `rpc.status_code` and `http.response.status_code`
   * need, at the cost of one cell per outcome seen and none per call.
   */
  private newDurationPart(cells: RouteCells, enc: EncodingCells, status: StatusCells, code: number, httpStatus: number): HistogramCell {
    const family = this.catalogue.callDuration;
    const slot = this.level.durationByCode ? code : 0;
    let series = enc.durations[slot];
    if (series === undefined) {
      const labels = encodingLabels(cells, enc);
      enc.durations[slot] = series = family.cell(this.level.durationByCode ? { ...labels, code: grpcCodeName(code) } : labels);
    }
    // The code's name, and the HTTP status as a number (0: none), OTLP's int attribute.
    status.duration = family.part(series, { code: grpcCodeName(code), http_status: httpStatus });
    return status.duration;
  }

  private newStreamCell(cells: RouteCells, shape: StreamType): HistogramCell {
    const cell = this.catalogue.streamDuration.cell({ ...routeLabels(cells), stream_type: shape });
    cells.streams[shape] = cell;
    return cell;
  }
}

function share(total: number, n: number, i: number): number {
  const each = Math.floor(total / n);
  return i === 0 ? total - each * (n - 1) : each;
}
