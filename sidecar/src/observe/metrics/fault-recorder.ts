// The sidecar's own faults, read from Faults at each scrape: exceptions
// contained per site, client connections the sidecar cut, by reason, and calls
// refused because their endpoint's HTTP/1.1 connections and queue were full,
// client streams the relay refused past its own limits, and client connections
// closed as they came past --max-connections. Every
// known site and reason has its series from the start, at 0: an alert on
// increase() needs the series before the first fault.
import { EJECTION_REASONS, FAULT_SITES, KEEPALIVE_SIDES, STREAM_REFUSAL_REASONS, TERMINATION_REASONS, type Faults } from '../../call/faults.ts';
import type { MetricCatalogue } from './catalogue.ts';

export class FaultRecorder {
  private readonly internalErrorCells;
  private readonly terminatedCells;
  private readonly queueOverflowCell;
  private readonly refusedCells;
  private readonly connectionOverflowCell;
  private readonly keepaliveCells;
  private readonly ejectionCells;
  private readonly ejectedCell;

  constructor(catalogue: MetricCatalogue, private readonly faults: Faults | undefined) {
    this.internalErrorCells = new Map(FAULT_SITES.map((where) => [where, catalogue.internalErrors.cell({ where })]));
    this.terminatedCells = new Map(TERMINATION_REASONS.map((reason) => [reason, catalogue.connectionsTerminated.cell({ reason })]));
    this.queueOverflowCell = catalogue.queueOverflows.cell({});
    this.refusedCells = new Map(STREAM_REFUSAL_REASONS.map((reason) => [reason, catalogue.streamsRefused.cell({ reason })]));
    this.connectionOverflowCell = catalogue.connectionOverflows.cell({});
    this.keepaliveCells = new Map(KEEPALIVE_SIDES.map((side) => [side, catalogue.keepaliveTimeouts.cell({ side })]));
    this.ejectionCells = new Map(EJECTION_REASONS.map((reason) => [reason, catalogue.ejections.cell({ reason })]));
    this.ejectedCell = catalogue.ejected.cell({});
  }

  /** Brings the counters up to date before a scrape renders them. */
  beforeRender(): void {
    if (!this.faults) return;
    for (const [where, site] of this.faults.internalErrors()) this.internalErrorCells.get(where)!.value = site.count;
    for (const [reason, n] of this.faults.terminated()) this.terminatedCells.get(reason)!.value = n;
    this.queueOverflowCell.value = this.faults.upstreamQueueOverflows();
    for (const [reason, n] of this.faults.streamsRefused()) this.refusedCells.get(reason)!.value = n;
    this.connectionOverflowCell.value = this.faults.connectionsOverLimit();
    for (const [side, n] of this.faults.keepaliveTimedOutCounts()) this.keepaliveCells.get(side)!.value = n;
    for (const [reason, n] of this.faults.endpointEjections()) this.ejectionCells.get(reason)!.value = n;
    this.ejectedCell.value = this.faults.ejectedNow();
  }
}
