// Unary or streaming: which of `rpcscope_call_duration_seconds` and
// `rpcscope_stream_duration_seconds` a call belongs to (docs/metrics.md).
import type { CallRecord } from '../call/call-record.ts';
import type { MethodShape } from '../route/proto-catalog.ts';

/**
 * The descriptor decides where .proto files say; else the messages seen do: at
 * most one each way is unary-shaped, however the method is declared. REST and
 * Connect unary (unframed) calls are unary by construction; tRPC by its response.
 */
export function callShape(call: CallRecord, descriptor: MethodShape | undefined): MethodShape {
  if (call.protocol === 'rest') return 'unary';
  // A tRPC subscription (SSE) is one request, then events from the server.
  if (call.trpc !== undefined) return call.trpc.streaming ? 'server_streaming' : 'unary';
  if (descriptor !== undefined) return descriptor;
  if (!call.framed) return 'unary';
  const manyRequests = call.requestMessages > 1;
  const manyResponses = call.responseMessages > 1;
  if (manyRequests) return manyResponses ? 'bidi_streaming' : 'client_streaming';
  return manyResponses ? 'server_streaming' : 'unary';
}
