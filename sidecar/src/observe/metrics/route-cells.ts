// The cells of one route, bound when the route is first seen in a direction:
// each recorder keeps its own slots here, filled on first use, so that a call's
// end only increments cells. Routes are interned by the router, so a Map keyed
// by the route object finds them without building a key.
import type { Direction, Encoding, Protocol } from '../../protocol/vocabulary.ts';
import type { MethodShape } from '../../route/proto-catalog.ts';
import type { Route } from '../../route/router.ts';
import type { HistogramCell, ValueCell, ValueFamily } from '../metric-cells.ts';
import type { DeadlineDetection } from '../../call/call-outcome.ts';

export type StreamType = Exclude<MethodShape, 'unary'>;

export const ENCODING_INDEX: Readonly<Record<Encoding, number>> = { proto: 0, json: 1, text: 2, other: 3 };

/**
 * The cells of one outcome (gRPC code and HTTP status) of a method: its
 * `rpcscope_calls_total` series, and the part of the latency histogram its unary
 * calls are recorded in (HistogramFamily.part), which OTLP exports by status
 * code and /metrics adds up into the series the detail level labels.
 */
export class StatusCells {
  duration: HistogramCell | undefined;
  constructor(
    readonly calls: ValueCell,
    /** The `rpcscope_protocol_calls_total` series of the same direction, protocol and code, shared by every method. */
    readonly protocolCalls: ValueCell,
  ) {}
}

/** Series of one (direction, protocol, encoding, method) (call-recorder.ts). */
export class EncodingCells {
  /** By `code * 1000 + http_status`: one lookup finds a call's count and its latency part. */
  readonly statuses = new Map<number, StatusCells>();
  /** The latency series /metrics serves: by gRPC code where the level labels durations by code; else the one cell is at 0. */
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

/** Series of one (direction, protocol): calls by code and the proxy overhead (call-recorder.ts), invalid deadline headers (deadline-recorder.ts). */
export interface ProtocolCells {
  /** `rpcscope_protocol_calls_total` by gRPC code number. */
  readonly calls: (ValueCell | undefined)[];
  overhead: HistogramCell | undefined;
  deadlineInvalid: ValueCell | undefined;
}

/** Series of one (direction, protocol, method), bound when the route is first seen in that direction. */
export class RouteCells {
  // call-recorder.ts
  readonly encodings: (EncodingCells | undefined)[] = [undefined, undefined, undefined, undefined];
  readonly streams: Partial<Record<StreamType, HistogramCell>> = {};
  firstMessage: HistogramCell | undefined;
  requestMessages: ValueCell | undefined;
  responseMessages: ValueCell | undefined;
  // reset-recorder.ts
  /** By `side error_code`. */
  readonly resets = new Map<string, ValueCell>();
  // deadline-recorder.ts
  deadlineRequested: HistogramCell | undefined;
  deadlineUsed: HistogramCell | undefined;
  withoutDeadline: ValueCell | undefined;
  readonly deadlineExceeded: Partial<Record<DeadlineDetection, ValueCell>> = {};
  constructor(readonly direction: Direction, readonly route: Route, readonly active: ValueCell, readonly perProtocol: ProtocolCells) {}
}

export function routeLabels(cells: RouteCells): { direction: Direction; protocol: Protocol; method: string } {
  return { direction: cells.direction, protocol: cells.route.protocol, method: cells.route.method };
}

export function encodingLabels(cells: RouteCells, enc: EncodingCells) {
  return { direction: cells.direction, protocol: cells.route.protocol, encoding: enc.encoding, method: cells.route.method, operation: cells.route.operation };
}

/** Every route's cells, by direction; a route's `calls_active` cell is bound with them. */
export class RouteCellTable {
  private readonly byDirection: Record<Direction, Map<Route, RouteCells>> = { inbound: new Map(), outbound: new Map() };
  private readonly protocolCells = new Map<string, ProtocolCells>();

  constructor(private readonly callsActive: ValueFamily) {}

  get(direction: Direction, route: Route): RouteCells {
    const byRoute = this.byDirection[direction];
    let cells = byRoute.get(route);
    if (cells === undefined) {
      const active = this.callsActive.cell({ direction, protocol: route.protocol, method: route.method });
      byRoute.set(route, (cells = new RouteCells(direction, route, active, this.protocolCellsFor(direction, route.protocol))));
    }
    return cells;
  }

  private protocolCellsFor(direction: Direction, protocol: Protocol): ProtocolCells {
    const key = `${direction} ${protocol}`;
    let cells = this.protocolCells.get(key);
    if (cells === undefined) this.protocolCells.set(key, (cells = { calls: [], overhead: undefined, deadlineInvalid: undefined }));
    return cells;
  }
}
