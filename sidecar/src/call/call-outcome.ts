// The final class of a call, decided once at its end from what the record
// holds: the `code` label and, for a missed deadline, who noticed.
import type { CallRecord } from './call-record.ts';
import type { CallReset } from '../protocol/vocabulary.ts';
import type { TrpcProcedure } from '../protocol/trpc-call.ts';
import { Http2Error, resetToGrpcCode } from '../protocol/reset-codes.ts';
import { GrpcCode, connectCodeToGrpcCode, grpcCodeName, restStatusToGrpcCode, rpcHttpStatusToGrpcCode } from '../protocol/status-codes.ts';

export type DeadlineDetection = 'status' | 'client_cancel' | 'late_response' | 'proxy';

/**
 * The reset that ended the call, if any. A NO_ERROR reset once the upstream's
 * response is complete is normal early closure (a server that has answered
 * stops reading the request), not a failure: docs/metrics.md neither counts it nor
 * lets it decide the code.
 */
export function endingReset(call: CallRecord): CallReset | undefined {
  const reset = call.reset;
  if (reset === undefined) return undefined;
  if (reset.code === Http2Error.NO_ERROR && (call.grpcStatus !== undefined || call.upstreamEndTime !== undefined)) return undefined;
  return reset;
}

/** Whether the call ended after the budget its caller gave it had run out. */
export function deadlinePassed(call: CallRecord): boolean {
  const ms = call.deadline?.ms;
  return ms !== undefined && call.endTime - call.startTime > ms;
}

/**
 * Whether a client reset is the client giving up at its own deadline. The client
 * starts its clock before its request reaches the sidecar, so its timeout reset
 * arrives a little before the deadline as measured here (grpc-js, connect-node
 * and browsers all do this). A client reset within that slack — 10 % of the
 * budget, at least 25 ms, at most 1 s — counts as at the deadline.
 */
function clientGaveUpAtDeadline(call: CallRecord, reset: CallReset | undefined): boolean {
  const ms = call.deadline?.ms;
  if (ms === undefined || reset?.side !== 'client') return false;
  const slack = Math.min(1000, Math.max(25, ms * 0.1));
  return call.endTime - call.startTime >= ms - slack;
}

/** The code the protocol itself reported (or implies), before resets, reachability and deadlines. */
function protocolCode(call: CallRecord): number {
  switch (call.protocol) {
    case 'grpc':
    case 'grpc_web':
      if (call.grpcStatus !== undefined) return call.grpcStatus;
      return rpcHttpStatusToGrpcCode(call.httpStatus);
    case 'connect':
      if (call.connectCode !== undefined) return connectCodeToGrpcCode(call.connectCode);
      if (call.connectEndStream) return GrpcCode.OK;
      // A unary success has no body code; a stream that ended without its
      // end-stream message did not finish, and falls to the table's UNKNOWN.
      if (!call.framed && call.httpStatus === 200) return GrpcCode.OK;
      return rpcHttpStatusToGrpcCode(call.httpStatus);
    case 'rest':
    case 'trpc':
      return call.httpStatus === 0 ? GrpcCode.UNKNOWN : restStatusToGrpcCode(call.httpStatus);
  }
}

/**
 * The gRPC code of a finished call, by docs/metrics.md's precedence: a passed
 * deadline (or the proxy enforcing it) wins over everything, since the caller
 * has given up by then; then the reset that ended the call; then an unreachable
 * upstream; then what the protocol reported.
 */
export function decideCodeNumber(call: CallRecord): number {
  const reset = endingReset(call);
  if (call.deadlineEnforced || deadlinePassed(call) || clientGaveUpAtDeadline(call, reset)) return GrpcCode.DEADLINE_EXCEEDED;
  if (reset !== undefined) return resetToGrpcCode(reset.code, reset.side);
  if (call.upstreamUnreachable) return GrpcCode.UNAVAILABLE;
  return protocolCode(call);
}

/**
 * The gRPC code of one procedure of a tRPC call. A procedure whose outcome was
 * read keeps it, even when the HTTP call was cut later (a streamed batch whose
 * first answers arrived); one still open when the call ended takes the call's
 * own ending (deadline, reset, unreachable upstream); one whose body said nothing
 * readable takes the HTTP status by the REST table.
 */
export function procedureCodeNumber(call: CallRecord, p: TrpcProcedure): number {
  if (p.code !== undefined) return p.code;
  const reset = endingReset(call);
  if (call.deadlineEnforced || deadlinePassed(call)) return GrpcCode.DEADLINE_EXCEEDED;
  if (reset !== undefined) return resetToGrpcCode(reset.code, reset.side);
  if (call.upstreamUnreachable) return GrpcCode.UNAVAILABLE;
  return protocolCode(call);
}

/** The `code` label of a finished call. */
export function decideCode(call: CallRecord): string {
  return grpcCodeName(decideCodeNumber(call));
}

/**
 * The `detected_by` label of `rpcscope_deadline_exceeded_total`, or undefined
 * when the call did not miss a deadline. It is defined exactly when the call's
 * code is DEADLINE_EXCEEDED, so the counter sums to those calls. The most direct
 * witness wins: the proxy's own enforcement, then the client giving up (a reset
 * or a dropped HTTP/1.1 connection after its deadline), then the upstream's
 * status, and last a response that simply ended too late.
 */
export function deadlineDetection(call: CallRecord): DeadlineDetection | undefined {
  if (call.deadlineEnforced) return 'proxy';
  const reset = endingReset(call);
  const passed = deadlinePassed(call);
  if ((passed && reset?.side === 'client') || clientGaveUpAtDeadline(call, reset)) return 'client_cancel';
  if (reset === undefined && !call.upstreamUnreachable && protocolCode(call) === GrpcCode.DEADLINE_EXCEEDED) return 'status';
  return passed ? 'late_response' : undefined;
}
