// Upstream endpoints: calls sent to each, in flight on each (read at each
// scrape), the unary latency per endpoint, open connections per endpoint, how
// many endpoints are known, and the load skew across them. Per-endpoint series
// outlive their endpoint by --endpoint-series-ttl, then are dropped.
import type { MethodShape } from '../../route/proto-catalog.ts';
import { MethodGuard, OTHER } from '../../route/method-guard.ts';
import { grpcCodeName } from '../../protocol/status-codes.ts';
import type { CallRecord } from '../../call/call-record.ts';
import { LoadSkew } from '../load-skew.ts';
import type { HistogramCell, ValueCell } from '../metric-cells.ts';
import type { ConnectionRecord } from '../../call/observer.ts';
import type { MetricCatalogue } from './catalogue.ts';

/**
 * Per-endpoint series outlive the endpoints (pods come and go) by
 * --endpoint-series-ttl; past this many at once the rest share `upstream="_OTHER"`
 * until departed endpoints' series are dropped and make room.
 */
const MAX_UPSTREAMS = 1000;

interface UpstreamCells {
  /** By gRPC code. */
  calls: (ValueCell | undefined)[];
  active: ValueCell;
  duration: HistogramCell;
  connections: ValueCell;
  /** When a scrape first found the endpoint gone (unknown, nothing open on it); undefined while it is not. */
  goneSince?: number;
}

export interface UpstreamRecorderOptions {
  /** Every upstream endpoint known now (`host:port`); the endpoints seen so far by default. */
  knownEndpoints: (() => readonly string[]) | undefined;
  /** --endpoint-series-ttl; 0 keeps departed endpoints' series forever. */
  endpointSeriesTtlMs: number;
  /** The clock endpoint departures are timed by. */
  clock: () => number;
}

export class UpstreamRecorder {
  private readonly guard = new MethodGuard(MAX_UPSTREAMS);
  private readonly cells = new Map<string, UpstreamCells>();
  private readonly endpointsCell: ValueCell;
  private readonly skewCell: ValueCell;
  private readonly skew = new LoadSkew();
  private readonly knownEndpoints: () => readonly string[];

  constructor(private readonly catalogue: MetricCatalogue, private readonly opts: UpstreamRecorderOptions) {
    this.endpointsCell = catalogue.upstreamEndpoints.cell({});
    this.skewCell = catalogue.loadSkewRatio.cell({});
    this.knownEndpoints = opts.knownEndpoints ?? (() => [...this.cells.keys()]);
  }

  callEnded(call: CallRecord, code: number, shape: MethodShape): void {
    if (call.upstream === '') return;
    const up = this.cellsFor(call.upstream);
    this.skew.record(call.upstream);
    (up.calls[code] ?? this.newCallCell(up, code)).value++;
    if (shape === 'unary' && call.upstreamStartTime !== undefined) {
      up.duration.record(((call.upstreamEndTime ?? call.endTime) - call.upstreamStartTime) / 1000);
    }
  }

  connectionOpened(conn: ConnectionRecord): void {
    if (conn.side === 'upstream') this.cellsFor(conn.peer).connections.value++;
  }

  connectionClosed(conn: ConnectionRecord): void {
    if (conn.side === 'upstream') this.cellsFor(conn.peer).connections.value--;
  }

  /** Before a scrape counts the calls in flight (inFlight) anew. */
  clearInFlight(): void {
    for (const cells of this.cells.values()) cells.active.value = 0;
  }

  /** A call in flight at a scrape, on the endpoint it was sent to if any. */
  inFlight(call: CallRecord): void {
    if (call.upstream !== '') this.cellsFor(call.upstream).active.value++;
  }

  /** The endpoints known now and the skew across them; drops departed endpoints' series. */
  beforeRender(): void {
    const known = this.knownEndpoints();
    if (this.opts.endpointSeriesTtlMs > 0) this.pruneDeparted(known);
    this.endpointsCell.value = known.length;
    this.skewCell.value = this.skew.ratio(known);
  }

  private cellsFor(endpoint: string): UpstreamCells {
    const known = this.cells.get(endpoint);
    if (known !== undefined) return known;
    // Endpoints past the cap are not remembered one by one: they all find the cells of `_OTHER`.
    const upstream = this.guard.admit(endpoint);
    let cells = this.cells.get(upstream);
    if (cells === undefined) {
      const c = this.catalogue;
      cells = { calls: [], active: c.upstreamActive.cell({ upstream }), duration: c.upstreamDuration.cell({ upstream }), connections: c.upstreamConnections.cell({ upstream }) };
      this.cells.set(upstream, cells);
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
    const now = this.opts.clock();
    const knownSet = new Set(known);
    const c = this.catalogue;
    for (const [endpoint, cells] of this.cells) {
      if (endpoint === OTHER || knownSet.has(endpoint) || cells.active.value > 0 || cells.connections.value > 0) {
        cells.goneSince = undefined;
        continue;
      }
      cells.goneSince ??= now;
      if (now - cells.goneSince < this.opts.endpointSeriesTtlMs) continue;
      for (const cell of cells.calls) if (cell) c.upstreamCalls.remove(cell);
      c.upstreamActive.remove(cells.active);
      c.upstreamDuration.remove(cells.duration);
      c.upstreamConnections.remove(cells.connections);
      this.cells.delete(endpoint);
      this.guard.forget(endpoint);
    }
  }

  private newCallCell(up: UpstreamCells, code: number): ValueCell {
    const cell = this.catalogue.upstreamCalls.cell({ upstream: up.active.attributes.upstream as string, code: grpcCodeName(code) });
    up.calls[code] = cell;
    return cell;
  }
}
