// One call as the tap shows it: what the access log writes, plus the client's
// address, and never a header value or a body byte. The fields are the call's
// metric labels and figures, so a line can be matched against /metrics.
import { performance } from 'node:perf_hooks';
import { http2ErrorName } from '../protocol/reset-codes.ts';
import { grpcCodeName } from '../protocol/status-codes.ts';
import { decideCodeNumber, endingReset } from '../call/call-outcome.ts';
import type { CallRecord } from '../call/call-record.ts';

export interface TapCall {
  kind: 'call';
  /** When the call ended, ISO 8601. */
  time: string;
  direction: string;
  protocol: string;
  method: string;
  operation: string;
  code: string;
  /** The HTTP status the caller received; empty when it got none. */
  http_status: string;
  duration_ms: number;
  request_bytes: number;
  response_bytes: number;
  upstream: string;
  /** The client connection's remote address, `ip:port`. */
  peer: string;
  /** `side/CODE` of the reset that ended the call, empty when none did. */
  reset: string;
  /** The budget the caller asked for, null when it sent none. */
  deadline_ms: number | null;
}

export function tapCall(call: CallRecord, peer: string): TapCall {
  const reset = endingReset(call);
  return {
    kind: 'call',
    time: new Date(performance.timeOrigin + call.endTime).toISOString(),
    direction: call.direction,
    protocol: call.protocol,
    method: call.route?.method ?? '',
    operation: call.route?.operation ?? '',
    code: grpcCodeName(decideCodeNumber(call)),
    http_status: call.httpStatus === 0 ? '' : String(call.httpStatus),
    duration_ms: Math.round((call.endTime - call.startTime) * 1000) / 1000,
    request_bytes: call.requestBytes,
    response_bytes: call.responseBytes,
    upstream: call.upstream,
    peer,
    reset: reset === undefined ? '' : `${reset.side}/${http2ErrorName(reset.code)}`,
    deadline_ms: call.deadline?.ms ?? null,
  };
}
