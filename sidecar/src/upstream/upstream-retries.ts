// Calls sent to the upstream a second time because it never processed the first
// attempt, which gRPC allows without the caller's consent ("transparent retry",
// grpc/proposal A6): the upstream's HTTP/2 layer refused the stream. Anything
// the upstream may have seen is never sent twice. The HTTP/1.1 relay sends again
// an idempotent request that met the app closing a reused keep-alive connection
// (relay-h1/h1-relay-replay.ts), where HTTP/1.1 allows it.
//
//   reason             what the upstream said                              spec
//   goaway             GOAWAY whose last-stream-id is below the stream      RFC 9113 §6.8: "streams ... not processed"
//   refused_stream     RST_STREAM(REFUSED_STREAM) before any response       RFC 9113 §8.7: "safe to retry"
//   connection_closed  a reused HTTP/1.1 connection closed (FIN or RST)     RFC 9112 §9.3.1, idempotent methods
//                      before any byte of the answer                        (RFC 9110 §9.2.2) only
//
// Counted in rpcscope_upstream_retries_total{reason}, each reason exported from
// the start at 0 so that an alert on increase() has its series.
import type http2 from 'node:http2';
import { NodeErrorCode } from '../core/errors.ts';
import { ValueFamily, type MetricFamily, type ValueCell } from '../observe/metric-cells.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import type { PooledSession } from './h2-session-pool.ts';

export const RETRY_REASONS = ['goaway', 'refused_stream', 'connection_closed'] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];

/**
 * The request body is held for a retry up to this size, until the response
 * begins; a larger body goes on unheld, and its call is not retried.
 */
export const RETRY_BODY_LIMIT = 64 * 1024;

export class UpstreamRetries {
  private readonly family = new ValueFamily('rpcscope_upstream_retries_total', 'Calls sent again on a fresh attempt because the upstream refused the first unprocessed (GOAWAY below it, or REFUSED_STREAM), or closed a reused HTTP/1.1 connection before answering an idempotent request.', 'counter');
  private readonly cells = new Map<RetryReason, ValueCell>(RETRY_REASONS.map((reason) => [reason, this.family.cell({ reason })]));

  retried(reason: RetryReason): void {
    this.cells.get(reason)!.value++;
  }

  /** Served on /metrics and pushed over OTLP with the call metrics. */
  get families(): readonly MetricFamily[] {
    return [this.family];
  }
}

/**
 * Why the upstream never processed an attempt on a pool session that closed
 * unanswered, if it did not: a stream above the last stream id of its GOAWAY
 * (nghttp2 closes those with REFUSED_STREAM) or never sent before the GOAWAY; or
 * a REFUSED_STREAM of its own. Any other ending may have reached the app, and is
 * not sent again. Read alike by the terminating path (forward-h2.ts) and the
 * relay's own connections (relay/relay-detour.ts).
 */
export function refusal(session: PooledSession, upstream: http2.ClientHttp2Stream, code: number, err: (Error & { code?: string }) | undefined): RetryReason | undefined {
  if (err?.code === NodeErrorCode.HTTP2_GOAWAY_SESSION) return 'goaway';
  if (code !== Http2Error.REFUSED_STREAM) return undefined;
  const last = session.goawayLastStreamId;
  return last !== undefined && upstream.id !== undefined && upstream.id > last ? 'goaway' : 'refused_stream';
}
