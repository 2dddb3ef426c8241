// Hand-built call records, as the proxy would leave them at a call's end.
import { newCallRecord } from '../../src/call/call-record.ts';
import type { CallRecord } from '../../src/call/call-record.ts';

let nextId = 1;

/** A call that started at t=1000 ms and ended `ms` later; `fields` says the rest. */
export function endedCall(fields: Partial<CallRecord> & { ms?: number } = {}): CallRecord {
  const { ms = 10, ...rest } = fields;
  const call = newCallRecord(nextId++, {
    direction: 'inbound',
    protocol: 'grpc',
    encoding: 'proto',
    framed: true,
    httpVersion: '2',
    httpMethod: 'POST',
    path: '/order.v1.OrderService/GetOrder',
    connectionId: 1,
    startTime: 1000,
  });
  call.endTime = 1000 + ms;
  return Object.assign(call, rest);
}
