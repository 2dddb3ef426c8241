// What becomes of a new client stream on one relayed connection: refused (past
// the relay's drain or the upstream's loss, a header list over the size, the
// connection's call or memory budget), or a call — relayed to the upstream,
// answered locally when it cannot be reached, or sent over the detour past the
// upstream's GOAWAY. A stream past the limit the client acknowledged, or past a
// first header list refused, ends the connection: the connection
// (relay-connection.ts) makes that move, told so by the verdict.
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { ConnectionRecord } from '../call/observer.ts';
import { Http2Error } from '../protocol/reset-codes.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { Flag } from '../h2/frame-types.ts';
import type { ClientWriter } from './client-writer.ts';
import type { ClientFrameBudget } from './frame-budget.ts';
import type { HeaderList, HpackDecoder } from './hpack-decoder.ts';
import type { LocalEndings } from './local-endings.ts';
import type { RelayCalls } from './relay-calls.ts';
import type { RelayDetour } from './relay-detour.ts';
import type { RelayGoaways } from './relay-goaway.ts';
import type { Phase } from './relay-phase.ts';
import { RelayStream, headerBag } from './relay-stream.ts';
import type { UpstreamWriter } from './upstream-writer.ts';

/** What the connection does after a new stream: nothing, cut it (past the stream limit), or GOAWAY (the first header list refused). */
export type Admitted = undefined | 'stream_limit' | 'header_list';

/** The parts a new stream's fate is decided by; the decoder's overflow and list size are the block just decoded. */
export interface AdmissionParts {
  ctx: ProxyContext;
  conn: ConnectionRecord;
  target: UpstreamUrl;
  translate: boolean;
  requestHpack: HpackDecoder;
  frameBudget: ClientFrameBudget;
  calls: RelayCalls;
  goaways: RelayGoaways;
  endings: LocalEndings;
  detour: RelayDetour;
  writer: ClientWriter;
  toUpstream: UpstreamWriter;
  /** Where the connection is when a call's deadline passes. */
  host: { readonly phase: Phase };
}

export class StreamAdmission {
  constructor(private readonly p: AdmissionParts) {}

  /** A header block opening stream `id` (ClientStreamStates.opening said so) on a connection at `phase`, decoded to `list`. */
  admit(id: number, flags: number, block: Buffer, list: HeaderList, phase: Phase): Admitted {
    const { ctx, requestHpack, frameBudget, calls, goaways, endings, toUpstream } = this.p;
    if (goaways.refuses(id) || phase === 'lost') return void endings.refuse(id, flags, block, list);
    // Past the limit it acknowledged (RFC 9113 §5.1.2), or on a connection already cut: no new call.
    if (phase === 'closed' || frameBudget.overStreamLimit(calls.streams.size)) return 'stream_limit';
    // Header list over the size: 431 and GOAWAY, as when terminating.
    if (requestHpack.overflowed) {
      endings.refuseHeaderList(id, this.p.translate);
      return frameBudget.firstHeaderListRefused() ? 'header_list' : undefined;
    }
    const headerBytes = requestHpack.listSize;
    const refusal = calls.refusal(headerBytes);
    if (refusal) {
      ctx.faults.streamRefused(refusal);
      return void endings.refuse(id, flags, block, list);
    }
    const stream = new RelayStream(ctx, this.p.conn, headerBag(list), this.p.target.authority, this.p.writer.streamWindow);
    toUpstream.rewrite(id, flags, block, list, stream.call.traceparent);
    calls.add(id, stream, list, headerBytes);
    stream.call.enforceDeadline(() => this.expire(id, stream));
    if (flags & Flag.END_STREAM) stream.requestEnded = true;
    if (phase === 'local') endings.unreachable(id, stream);
    // The upstream said it takes no stream above this one (its HEADERS still went, for its HPACK table): sent elsewhere.
    else if (phase === 'detached' || goaways.pastUpstream(id)) {
      if (phase === 'detached' || goaways.upstreamHidden) this.p.detour.forward(id, stream);
      // The client read the GOAWAY too, and retries the stream itself.
      else calls.end(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
    }
    return undefined;
  }

  /** --enforce-deadlines: the call's deadline passed (LocalEndings.deadline). */
  private expire(id: number, stream: RelayStream): void {
    if (this.p.calls.streams.get(id) !== stream || this.p.host.phase === 'closed') return;
    this.p.endings.deadline(id, stream);
  }
}
