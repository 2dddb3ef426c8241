// The catalogue: every metric family of docs/metrics.md, its name, help text,
// type and buckets, in the order the exposition lists them. The names and help
// texts are the public contract (the golden tests pin them); the recorders beside
// this file bind cells in these families and never define one of their own.
import {
  CALL_DURATION_SECONDS,
  CONNECTION_CALLS,
  CONNECTION_DURATION_SECONDS,
  DEADLINE_SECONDS,
  DEADLINE_USED_RATIO,
  PAYLOAD_BYTES,
  PROXY_OVERHEAD_SECONDS,
  STREAM_DURATION_SECONDS,
} from '../buckets.ts';
import type { DetailLevel } from '../metrics-detail.ts';
import { HistogramFamily, ValueFamily, type MetricFamily } from '../metric-cells.ts';

export class MetricCatalogue {
  // Calls and streams (call-recorder.ts).
  readonly callsTotal = new ValueFamily('rpcscope_calls_total', 'Finished calls, unary or streaming.', 'counter');
  readonly protocolCalls = new ValueFamily('rpcscope_protocol_calls_total', 'Finished calls by direction, protocol and code: rpcscope_calls_total without its per-method labels, for rules over a whole fleet.', 'counter');
  readonly callsActive = new ValueFamily('rpcscope_calls_active', 'Calls and streams in flight.', 'gauge');
  readonly callDuration: HistogramFamily;
  readonly callBytes = new ValueFamily('rpcscope_call_bytes_total', 'Body bytes of finished calls, by flow.', 'counter');
  readonly payload = new HistogramFamily('rpcscope_payload_bytes', 'Body bytes of one call, by flow.', PAYLOAD_BYTES);
  readonly overhead = new HistogramFamily('rpcscope_proxy_overhead_seconds', 'Time the sidecar added to a call: its duration less the upstream part.', PROXY_OVERHEAD_SECONDS);
  readonly streamDuration = new HistogramFamily('rpcscope_stream_duration_seconds', 'Lifetime of streaming calls.', STREAM_DURATION_SECONDS);
  readonly firstMessage = new HistogramFamily('rpcscope_stream_first_message_seconds', 'Time from request headers to the first response message of a streaming call.', CALL_DURATION_SECONDS);
  readonly messages = new ValueFamily('rpcscope_messages_total', 'Length-prefixed messages, by flow.', 'counter');
  // Resets and GOAWAYs (reset-recorder.ts).
  readonly resets = new ValueFamily('rpcscope_stream_resets_total', 'RST_STREAM frames (and HTTP/1.1 connections closed mid-call), by sender and error code.', 'counter');
  readonly goaways = new ValueFamily('rpcscope_http2_goaways_total', 'GOAWAY frames received or sent, by side and error code.', 'counter');
  // Deadlines (deadline-recorder.ts).
  readonly deadlineRequested = new HistogramFamily('rpcscope_deadline_requested_seconds', 'Deadline budgets callers asked for.', DEADLINE_SECONDS);
  readonly deadlineExceeded = new ValueFamily('rpcscope_deadline_exceeded_total', 'Calls that did not finish inside their deadline, by who noticed.', 'counter');
  readonly deadlineUsed = new HistogramFamily('rpcscope_deadline_used_ratio', 'Elapsed over requested time at the end of calls that carried a deadline.', DEADLINE_USED_RATIO);
  readonly withoutDeadline = new ValueFamily('rpcscope_calls_without_deadline_total', 'gRPC-family calls that carried no deadline.', 'counter');
  readonly deadlineInvalid = new ValueFamily('rpcscope_deadline_header_invalid_total', 'Calls whose deadline header could not be parsed.', 'counter');
  // Connections (connection-recorder.ts).
  readonly connectionsActive = new ValueFamily('rpcscope_connections_active', 'Open connections.', 'gauge');
  readonly connectionDuration = new HistogramFamily('rpcscope_connection_duration_seconds', 'Lifetime of closed connections.', CONNECTION_DURATION_SECONDS);
  readonly connectionCalls = new HistogramFamily('rpcscope_connection_calls', 'Calls carried by each closed connection.', CONNECTION_CALLS);
  // Upstream endpoints (upstream-recorder.ts).
  readonly upstreamCalls = new ValueFamily('rpcscope_upstream_calls_total', 'Calls sent to each upstream endpoint.', 'counter');
  readonly upstreamActive = new ValueFamily('rpcscope_upstream_calls_active', 'Calls in flight per upstream endpoint.', 'gauge');
  readonly upstreamDuration = new HistogramFamily('rpcscope_upstream_call_duration_seconds', 'Latency of unary-shaped calls per upstream endpoint, from request sent to response end received.', CALL_DURATION_SECONDS);
  readonly upstreamConnections = new ValueFamily('rpcscope_upstream_connections_active', 'Open connections per upstream endpoint.', 'gauge');
  readonly upstreamEndpoints = new ValueFamily('rpcscope_upstream_endpoints', 'Endpoints currently known for the upstream.', 'gauge');
  readonly loadSkewRatio = new ValueFamily('rpcscope_load_skew_ratio', 'Max / mean of the per-endpoint call rate over the last 30 s, idle endpoints counting as 0.', 'gauge');
  // The sidecar's own faults (fault-recorder.ts).
  readonly internalErrors = new ValueFamily('rpcscope_internal_errors_total', 'Exceptions raised while handling one connection or call, contained there; the sidecar kept serving.', 'counter');
  readonly connectionsTerminated = new ValueFamily('rpcscope_connections_terminated_total', 'Client connections the sidecar ended itself, by reason.', 'counter');
  readonly queueOverflows = new ValueFamily('rpcscope_upstream_queue_overflow_total', 'Calls answered UNAVAILABLE (503) because their endpoint\'s HTTP/1.1 connections and queue were full.', 'counter');
  readonly streamsRefused = new ValueFamily('rpcscope_streams_refused_total', 'Client HTTP/2 streams the relay refused (REFUSED_STREAM) past its own limits, by reason.', 'counter');
  readonly connectionOverflows = new ValueFamily('rpcscope_connections_overflow_total', 'Client connections closed unread as they were accepted, because --max-connections were open.', 'counter');
  // Peers that vanished (fault-recorder.ts): keepalive and outlier ejection.
  readonly keepaliveTimeouts = new ValueFamily('rpcscope_keepalive_timeouts_total', 'Connections closed because a PING went unanswered, and nothing else was read, within --keepalive-timeout, by side.', 'counter');
  readonly ejections = new ValueFamily('rpcscope_upstream_ejections_total', 'Outbound endpoints taken out of rotation for a while after failing, by reason.', 'counter');
  readonly ejected = new ValueFamily('rpcscope_upstream_ejected_endpoints', 'Outbound endpoints out of rotation now.', 'gauge');

  /** Every family in docs/metrics.md order, which is the exposition's order. */
  readonly families: readonly MetricFamily[];

  /** `nativeHistograms`: the latency, stream and deadline histograms keep native buckets too (--histograms native or both). */
  constructor(level: DetailLevel, nativeHistograms = false) {
    this.callDuration = new HistogramFamily('rpcscope_call_duration_seconds', 'Duration of unary-shaped calls, from request headers received to response end sent.', level.durationBuckets);
    if (nativeHistograms) {
      for (const f of [this.callDuration, this.streamDuration, this.deadlineRequested, this.deadlineUsed]) f.native = true;
    }
    this.families = [
      this.callsTotal, this.protocolCalls, this.callsActive, this.callDuration, this.callBytes, this.payload, this.overhead,
      this.streamDuration, this.firstMessage, this.messages,
      this.resets, this.goaways,
      this.deadlineRequested, this.deadlineExceeded, this.deadlineUsed, this.withoutDeadline, this.deadlineInvalid,
      this.connectionsActive, this.connectionDuration, this.connectionCalls,
      this.upstreamCalls, this.upstreamActive, this.upstreamDuration, this.upstreamConnections, this.upstreamEndpoints, this.loadSkewRatio,
      this.internalErrors, this.connectionsTerminated, this.queueOverflows, this.streamsRefused, this.connectionOverflows,
      this.keepaliveTimeouts, this.ejections, this.ejected,
    ];
  }
}
