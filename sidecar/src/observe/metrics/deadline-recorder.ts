// Deadlines: the budgets callers asked for, the share of it a call used, calls
// that carried none (gRPC family) or an unparsable one, and calls that missed
// theirs, by who noticed.
import { GrpcCode } from '../../protocol/status-codes.ts';
import { deadlineDetection } from '../../call/call-outcome.ts';
import type { CallRecord } from '../../call/call-record.ts';
import type { MetricCatalogue } from './catalogue.ts';
import { routeLabels, type RouteCells } from './route-cells.ts';

export class DeadlineRecorder {
  constructor(private readonly catalogue: MetricCatalogue) {}

  callEnded(call: CallRecord, cells: RouteCells, code: number, elapsedMs: number): void {
    const c = this.catalogue;
    const deadline = call.deadline;
    const ms = deadline?.ms;
    if (ms !== undefined) {
      (cells.deadlineRequested ??= c.deadlineRequested.cell(routeLabels(cells))).record(ms / 1000);
      // A zero budget has no ratio; it is spent before the call starts and shows as a miss.
      if (ms > 0) (cells.deadlineUsed ??= c.deadlineUsed.cell(routeLabels(cells))).record(elapsedMs / ms);
    } else {
      if (deadline !== undefined) {
        const pc = cells.perProtocol;
        (pc.deadlineInvalid ??= c.deadlineInvalid.cell({ direction: call.direction, protocol: call.protocol })).value++;
      }
      // An unparsable header is proxied as if absent, so the call counts as carrying none.
      if (call.protocol !== 'rest' && call.protocol !== 'trpc') (cells.withoutDeadline ??= c.withoutDeadline.cell(routeLabels(cells))).value++;
    }
    if (code === GrpcCode.DEADLINE_EXCEEDED) {
      const by = deadlineDetection(call);
      if (by !== undefined) (cells.deadlineExceeded[by] ??= c.deadlineExceeded.cell({ ...routeLabels(cells), detected_by: by })).value++;
    }
  }
}
