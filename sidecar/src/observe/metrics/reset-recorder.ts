// Resets and GOAWAYs: rpcscope_stream_resets_total by route, sender and error
// code (an HTTP/1.1 connection closed mid-call counting as one), and
// rpcscope_http2_goaways_total by side and error code.
import type { CallReset } from '../../protocol/vocabulary.ts';
import { http2ErrorName } from '../../protocol/reset-codes.ts';
import { endingReset } from '../../call/call-outcome.ts';
import type { CallRecord } from '../../call/call-record.ts';
import type { ValueCell } from '../metric-cells.ts';
import type { GoawaySide } from '../../call/observer.ts';
import type { MetricCatalogue } from './catalogue.ts';
import { routeLabels, type RouteCells } from './route-cells.ts';

export class ResetRecorder {
  private readonly goawayCells = new Map<string, ValueCell>();

  constructor(private readonly catalogue: MetricCatalogue) {}

  /** The reset that ended the call, if one did. */
  callEnded(call: CallRecord, cells: RouteCells): void {
    const reset = endingReset(call);
    if (reset !== undefined) this.resetCell(cells, reset).value++;
  }

  goaway(side: GoawaySide, code: number): void {
    const errorCode = http2ErrorName(code);
    const key = `${side} ${errorCode}`;
    let cell = this.goawayCells.get(key);
    if (cell === undefined) this.goawayCells.set(key, (cell = this.catalogue.goaways.cell({ side, error_code: errorCode })));
    cell.value++;
  }

  private resetCell(cells: RouteCells, reset: CallReset): ValueCell {
    const errorCode = http2ErrorName(reset.code);
    const key = `${reset.side} ${errorCode}`;
    let cell = cells.resets.get(key);
    if (cell === undefined) cells.resets.set(key, (cell = this.catalogue.resets.cell({ ...routeLabels(cells), side: reset.side, error_code: errorCode })));
    return cell;
  }
}
