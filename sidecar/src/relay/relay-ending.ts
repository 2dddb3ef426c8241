// Why a relayed connection ends, and so how the calls still in flight on it
// end: the client cut for misbehaving, a direction whose bytes could not be
// read, a client gone silent or closed, the upstream gone. The first reason
// known is the one its calls read, but where the relay cuts the connection
// itself. The connection (relay-connection.ts) moves the phases and writes the
// frames; this says why, to the logs and fault counts once, and to the calls.
import { CONNECTION_CLOSED } from '../call/call-record.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import type { TerminationReason } from '../call/faults.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';
import type { FrameError } from './frame-parser.ts';
import type { RelayCalls, Reset } from './relay-calls.ts';
import type { RelayGoaways } from './relay-goaway.ts';

export class RelayEnding {
  /** Why the relay ends calls still in flight when the connection goes, once it knows. */
  reset: Reset | undefined;

  constructor(private readonly ctx: ProxyContext, private readonly conn: ConnectionRecord, private readonly calls: RelayCalls, private readonly goaways: RelayGoaways) {}

  /** `reset`, unless a reason is known already. */
  unlessKnown(reset: Reset): void {
    this.reset ??= reset;
  }

  /** The relay cuts a misbehaving client's connection (`reason`): told, and the GOAWAY with `code` that tells the client, for the caller to write. */
  cut(reason: TerminationReason, code: number, message: string): Buffer {
    this.ctx.faults.connectionTerminated(reason);
    const goaway = this.goaways.last(code);
    this.ctx.log.warn(message, { peer: this.conn.peer });
    this.reset = { side: 'client', code: Http2Error.CANCEL };
    return goaway;
  }

  /** Bytes `from` one side could not be read (`err`): told, and for the client's, the GOAWAY that tells it, for the caller to write. */
  unreadable(from: 'client' | 'upstream', err: unknown): Buffer | undefined {
    const frameError = hasCode(err, ErrorCode.H2_FRAME) ? (err as FrameError) : undefined;
    if (frameError === undefined) {
      this.ctx.faults.internalError('relay', err);
    } else {
      this.ctx.log.debug('HTTP/2 frames could not be read; connection closed', { from, error: frameError.message, peer: this.conn.peer });
    }
    if (from === 'upstream') {
      this.reset = { side: 'upstream', code: Http2Error.PROTOCOL_ERROR };
      return undefined;
    }
    this.ctx.faults.connectionTerminated('protocol_error');
    this.reset = { side: 'client', code: Http2Error.CANCEL };
    return this.goaways.last(frameError?.h2Code ?? Http2Error.INTERNAL_ERROR);
  }

  /** The client answered no PING in time: gone without FIN or RST, its calls end as a client gone. */
  vanished(): void {
    this.ctx.faults.connectionTerminated('keepalive_timeout');
    this.ctx.faults.keepaliveTimedOut('downstream');
    this.ctx.log.info('client connection closed: no answer to PING within --keepalive-timeout', { peer: this.conn.peer, timeoutMs: this.ctx.config.keepaliveTimeoutMs });
    this.reset = { side: 'client', code: CONNECTION_CLOSED };
  }

  /** Ends the calls still in flight with the reason the connection went. */
  finish(): void {
    this.calls.endAll(this.reset ?? { side: 'client', code: Http2Error.CANCEL });
  }
}
