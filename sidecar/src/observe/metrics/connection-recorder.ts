// Connections, downstream and upstream, by HTTP version: how many are open, how
// long the closed ones lived and how many calls each carried.
import type { HistogramCell, ValueCell } from '../metric-cells.ts';
import type { ConnectionRecord } from '../../call/observer.ts';
import type { MetricCatalogue } from './catalogue.ts';

interface ConnectionCells {
  active: ValueCell;
  duration: HistogramCell;
  calls: HistogramCell;
}

export class ConnectionRecorder {
  private readonly cells = new Map<string, ConnectionCells>();

  constructor(private readonly catalogue: MetricCatalogue) {}

  opened(conn: ConnectionRecord): void {
    this.cellsFor(conn).active.value++;
  }

  closed(conn: ConnectionRecord): void {
    const cells = this.cellsFor(conn);
    cells.active.value--;
    cells.duration.record((conn.closeTime - conn.openTime) / 1000);
    cells.calls.record(conn.calls);
  }

  private cellsFor(conn: ConnectionRecord): ConnectionCells {
    const key = `${conn.side} ${conn.httpVersion}`;
    let cells = this.cells.get(key);
    if (cells === undefined) {
      const labels = { side: conn.side, http_version: conn.httpVersion };
      const c = this.catalogue;
      cells = {
        active: c.connectionsActive.cell(labels),
        duration: c.connectionDuration.cell(labels),
        calls: c.connectionCalls.cell(labels),
      };
      this.cells.set(key, cells);
    }
    return cells;
  }
}
