// A REST call served by a gRPC upstream through its google.api.http binding:
// the JSON request becomes the request message, the call goes out as gRPC on
// the pooled HTTP/2 session, and the answer comes back as proto3 JSON — one
// object for a unary method; for a server stream, one JSON object per line
// (application/x-ndjson), or server-sent events when the caller accepts
// text/event-stream. Errors are google.rpc.Status JSON with the mapped HTTP
// status; header and trailer metadata reach the caller as response headers.
import { performance } from 'node:perf_hooks';
import type { Call } from '../call/call.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { GrpcCode } from '../protocol/status-codes.ts';
import type { Caller } from './caller.ts';
import { EnvelopeFlag, envelope } from '../protocol/grpc-envelope.ts';
import { requestMetadata, responseMetadata, startGrpcCall, type GrpcEnd } from './grpc-upstream-call.ts';
import { restRequestMessage, restResponseJson } from './rest-request.ts';
import { rpcStatusJson } from './rpc-status-json.ts';
import type { Matched, TranscodeTable } from '../route/transcode-table.ts';
import type { TranscodeMetrics } from './transcode-metrics.ts';
import { ErrorCode, errorCode, hasCode } from '../core/errors.ts';

/** The largest JSON request body read whole. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
const JSON_TYPE = 'application/json';

function accepts(header: string | string[] | undefined, type: string): boolean {
  const text = Array.isArray(header) ? header.join(',') : (header ?? '');
  return text.split(',').some((t) => t.split(';')[0]!.trim().toLowerCase() === type);
}

export interface RestTranscodeDeps {
  ctx: ProxyContext;
  table: TranscodeTable;
  metrics: TranscodeMetrics;
  /** Extra response headers (CORS) for this caller. */
  extraHeaders: Record<string, string>;
}

export function transcodeRest(deps: RestTranscodeDeps, call: Call, caller: Caller, matched: Matched, query: string): void {
  const { ctx, table, metrics } = deps;
  const { record, tap } = call;
  const { binding } = matched;
  let upstream: { cancel(): void; pause(): void; resume(): void } | undefined;
  let translateMs = 0;
  const timed = <T>(f: () => T): T => {
    const t0 = performance.now();
    try {
      return f();
    } finally {
      translateMs += performance.now() - t0;
    }
  };

  caller.onDone((finished, resetCode) => {
    if (translateMs > 0) metrics.translateTime('rest_to_grpc', translateMs / 1000);
    if (finished) return call.end();
    upstream?.cancel();
    call.end({ side: 'client', code: resetCode ?? -1 });
  });

  const respond = (status: number, headers: Record<string, string | string[]>, body: Buffer): void => {
    if (caller.headersSent) return;
    const out = { ...headers, ...deps.extraHeaders, 'content-type': JSON_TYPE, 'content-length': String(body.length) };
    tap.responseHeaders(status, out);
    tap.responseData(body);
    caller.respond(status, out);
    caller.end(body);
  };
  const fail = (code: number, message: string, headers: Record<string, string | string[]> = {}): void => {
    const r = rpcStatusJson(code, message);
    respond(r.status, headers, r.body);
  };

  metrics.translated(record.protocol, 'rest_to_grpc', binding.rpc);
  caller.readBody(MAX_REQUEST_BYTES, (chunk) => tap.requestData(chunk)).then(
    (body) => {
      let message: Uint8Array;
      try {
        message = timed(() => restRequestMessage(table.json, binding, matched.values, query, body));
      } catch (err) {
        if (hasCode(err, ErrorCode.JSON_MAPPING)) return fail(GrpcCode.INVALID_ARGUMENT, err.message);
        return fail(GrpcCode.INVALID_ARGUMENT, `the request does not fit ${binding.requestType.name}: ${(err as Error).message}`);
      }
      const target = ctx.config.grpcUpstream ? ctx.upstreams.pick(record.connectionId, true)?.target : call.target;
      if (!target) return fail(GrpcCode.UNAVAILABLE, 'no upstream endpoint');
      if (binding.serverStreaming) return stream(target, message);
      unary(target, message);
    },
    (err: Error) => {
      if (errorCode(err) === ErrorCode.BODY_TOO_LARGE) fail(GrpcCode.RESOURCE_EXHAUSTED, err.message);
    },
  );

  function unary(target: NonNullable<Call['target']>, message: Uint8Array): void {
    let reply: Buffer | undefined;
    let replies = 0;
    const handle = startGrpcCall(ctx, call, target, binding.rpc, requestMetadata(caller.headers), {
      onHeaders() {},
      onFrame(f) {
        replies++;
        reply = f.message;
        if (f.flags & EnvelopeFlag.COMPRESSED) replies = Infinity;
      },
      onEnd(end: GrpcEnd) {
        const metadata = responseMetadata(end.headers, end.trailers);
        if (end.code !== GrpcCode.OK) return fail(end.code, end.message, metadata);
        if (replies !== 1 || !reply) return fail(GrpcCode.INTERNAL, replies === Infinity ? 'the upstream compressed a message it was not asked to' : `the upstream answered ${replies} messages to a unary call`, metadata);
        let body: Buffer;
        try {
          const r = reply;
          body = timed(() => Buffer.from(JSON.stringify(restResponseJson(table.json, binding, r))));
        } catch (err) {
          return fail(GrpcCode.INTERNAL, `the upstream's answer is not a ${binding.responseType.name}: ${(err as Error).message}`, metadata);
        }
        respond(200, metadata, body);
      },
    });
    upstream = handle;
    handle.write(envelope(message));
    handle.end();
  }

  function stream(target: NonNullable<Call['target']>, message: Uint8Array): void {
    const sse = accepts(caller.headers.accept, 'text/event-stream');
    let started = false;
    const start = (metadata: Record<string, string | string[]>): void => {
      if (started) return;
      started = true;
      const out = { ...metadata, ...deps.extraHeaders, 'content-type': sse ? 'text/event-stream' : 'application/x-ndjson', 'cache-control': 'no-cache' };
      tap.responseHeaders(200, out);
      caller.respond(200, out);
    };
    const send = (text: string): void => {
      const chunk = Buffer.from(text);
      tap.responseData(chunk);
      if (!caller.write(chunk)) {
        handle.pause();
        caller.onDrain(() => handle.resume());
      }
    };
    const handle = startGrpcCall(ctx, call, target, binding.rpc, requestMetadata(caller.headers), {
      onHeaders() {},
      onFrame(f) {
        let json: string;
        try {
          json = timed(() => JSON.stringify(restResponseJson(table.json, binding, f.message)));
        } catch (err) {
          handle.cancel();
          if (!started) return fail(GrpcCode.INTERNAL, `the upstream's answer is not a ${binding.responseType.name}: ${(err as Error).message}`);
          send(sse ? `event: error\ndata: ${JSON.stringify({ code: GrpcCode.INTERNAL, message: 'undecodable message', details: [] })}\n\n` : `${JSON.stringify({ error: { code: GrpcCode.INTERNAL, message: 'undecodable message', details: [] } })}\n`);
          caller.end();
          return;
        }
        start({});
        send(sse ? `data: ${json}\n\n` : `${json}\n`);
      },
      onEnd(end: GrpcEnd) {
        if (!started) {
          if (end.code !== GrpcCode.OK) return fail(end.code, end.message, responseMetadata(end.headers, end.trailers));
          start(responseMetadata(end.headers, end.trailers));
        } else if (end.code !== GrpcCode.OK) {
          // The status came after messages: it can only travel in the body now (as grpc-gateway's `{"error": …}` line).
          const status = { code: end.code, message: end.message, details: [] };
          send(sse ? `event: error\ndata: ${JSON.stringify(status)}\n\n` : `${JSON.stringify({ error: status })}\n`);
        }
        caller.end();
      },
    });
    upstream = handle;
    handle.write(envelope(message));
    handle.end();
  }
}
