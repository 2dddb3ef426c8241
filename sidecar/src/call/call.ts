// One call's life in either data plane: its record opened when the request headers
// arrive, its connection's counters, and exactly one end however it ends.
import type { UpstreamUrl } from '../config/parse-value.ts';
import { newCallRecord, type CallRecord } from './call-record.ts';
import type { CallReset, Direction, HttpVersion } from '../protocol/vocabulary.ts';
import type { ConnectionRecord } from './observer.ts';
import { CallTap } from '../protocol/call-tap.ts';
import { readDeadline } from '../protocol/deadline-header.ts';
import { isGrpcFamily, type Detected } from '../protocol/detect.ts';
import type { Router } from '../route/router.ts';
import type { CallTracing } from './call-tracing.ts';
import type { Faults } from './faults.ts';
import type { CallsInFlight } from './calls-in-flight.ts';
import type { Observer } from './observer.ts';
import { now } from '../clock.ts';


type HeaderBag = Record<string, string | string[] | undefined>;

/**
 * Where a call goes, and how the balancer learns that it ended: the call hands
 * its record to onCallEnded once, after its end is recorded (as grpc-js's pick
 * result carries onCallEnded). Bound once per endpoint, not per call.
 */
export interface UpstreamPick {
  readonly target: UpstreamUrl;
  /** Undefined when the choice does not depend on how calls end (inbound: the app). */
  readonly onCallEnded: ((call: CallRecord) => void) | undefined;
}

/**
 * What a call reads of the data plane's parts: the pipeline's ProxyContext holds
 * them all. The upstream side is asked for through the two methods a call uses,
 * so that the call sits below the balancer and the pools.
 */
export interface CallDeps {
  readonly config: { readonly mode: Direction; readonly enforceDeadlines: boolean };
  readonly router: Router;
  readonly upstreams: { pick(connectionId: number, grpcFamily: boolean): UpstreamPick | undefined };
  readonly tracing: CallTracing;
  readonly observer: Observer;
  readonly faults: Faults;
  /** The HTTP version learnt for each endpoint (upstream/upstream-protocol.ts): forgotten when it cannot be reached. */
  readonly protocols: { forget(target: UpstreamUrl): void };
  /** Calls in flight, for the drain to wait on. */
  readonly inflight: CallsInFlight;
  nextCallId(): number;
}

/**
 * What a data plane that forwards a request before it records it knows of the
 * call already: when the request arrived, and the pick it was sent by.
 */
export interface CallStart {
  readonly startTime: number;
  readonly pick: UpstreamPick | undefined;
}

export class Call {
  readonly record: CallRecord;
  readonly tap: CallTap;
  /** Where the call goes; undefined when no upstream endpoint is known. */
  readonly target: UpstreamUrl | undefined;
  /** The balancer's pick: told when the call ends. */
  private readonly pick: UpstreamPick | undefined;
  /** The traceparent to send upstream in place of the caller's (tracing on), else undefined. */
  readonly traceparent: string | undefined;
  private ended = false;
  private deadlineTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: CallDeps,
    private readonly conn: ConnectionRecord,
    detected: Detected,
    httpVersion: HttpVersion,
    httpMethod: string,
    path: string,
    headers: HeaderBag,
    /** Given when the request went on before the call was made (relay-balanced/balanced-call.ts); else the call starts now and picks. */
    start?: CallStart,
  ) {
    const record = newCallRecord(ctx.nextCallId(), {
      direction: ctx.config.mode,
      protocol: detected.protocol,
      encoding: detected.encoding,
      framed: detected.framed,
      httpVersion,
      httpMethod,
      path,
      connectionId: conn.id,
      startTime: start ? start.startTime : now(),
    });
    record.deadline = readDeadline(detected.protocol, headers);
    record.trpc = detected.trpc;
    // The route is resolved here, once, whichever data plane carries the call.
    record.route = ctx.router.resolveCall(record);
    this.record = record;
    this.tap = new CallTap(record, detected.base64, now);
    this.pick = start ? start.pick : ctx.upstreams.pick(conn.id, isGrpcFamily(detected.protocol));
    this.target = this.pick?.target;
    // Whatever may throw comes before the call is registered: a call that failed to
    // start must not stay in flight, holding a drain open.
    this.traceparent = ctx.tracing.start(record, headers);
    conn.calls++;
    conn.active++;
    ctx.inflight.started();
    ctx.observer.callStarted(record);
  }

  /** The request went on to the upstream endpoint (`host:port`), at `at` (now by default). */
  sent(endpoint: string, at = now()): void {
    this.record.upstreamStartTime = at;
    this.record.upstream = endpoint;
  }

  /**
   * With --enforce-deadlines, run `expire` when the caller's deadline passes: the
   * forwarder answers DEADLINE_EXCEEDED (or resets) and cancels the upstream.
   */
  enforceDeadline(expire: () => void): void {
    const ms = this.record.deadline?.ms;
    if (!this.ctx.config.enforceDeadlines || ms === undefined) return;
    this.deadlineTimer = setTimeout(() => {
      if (this.ended) return;
      this.record.deadlineEnforced = true;
      expire();
    }, Math.max(0, this.record.startTime + ms - now()));
  }

  /** End the call once, with the reset that ended it if any. */
  end(reset?: CallReset): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.deadlineTimer);
    const r = this.record;
    r.endTime = now();
    if (reset && !r.reset) r.reset = reset;
    // An endpoint that could not be reached may come back speaking another version.
    if (r.upstreamUnreachable && this.target) this.ctx.protocols.forget(this.target);
    this.tap.finish();
    this.conn.active--;
    this.ctx.inflight.ended();
    this.ctx.observer.callEnded(r);
    const onCallEnded = this.pick?.onCallEnded;
    if (onCallEnded !== undefined) {
      try {
        onCallEnded(r);
      } catch (err) {
        // Contained as an observer's fault was, when the balancer learnt call ends as one.
        this.ctx.faults.internalError('observer', err);
      }
    }
    try {
      this.ctx.tracing.end(r);
    } catch (err) {
      // The call is over and counted: a tracer's fault stays the tracer's.
      this.ctx.faults.internalError('observer', err);
    }
  }
}
