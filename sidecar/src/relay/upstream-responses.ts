// The upstream's frames on the open calls: response header blocks and DATA,
// read off as they pass; its resets, which end their calls; and the calls it
// refused unprocessed — a RST_STREAM REFUSED_STREAM before any response, or a
// stream past its GOAWAY's last id — each sent once more over the detour
// (relay-detour.ts) where the request is whole and the client may be kept from
// reading the refusal, ended as refused otherwise.
import { Http2Error } from '../protocol/reset-codes.ts';
import { Flag } from '../h2/frame-types.ts';
import { rstStreamFrame } from '../h2/frames.ts';
import type { ClientWriter } from './client-writer.ts';
import type { ClientFrameBudget } from './frame-budget.ts';
import type { FrameParser } from './frame-parser.ts';
import { voidFrame } from './frame-rewrite.ts';
import type { HeaderList } from './hpack-decoder.ts';
import type { RelayCalls } from './relay-calls.ts';
import type { RelayDetour } from './relay-detour.ts';
import type { RelayGoaways } from './relay-goaway.ts';
import { responseFields } from './relay-stream.ts';
import type { UpstreamLink } from './upstream-connect.ts';

export class UpstreamResponses {
  constructor(
    private readonly calls: RelayCalls,
    private readonly detour: RelayDetour,
    private readonly goaways: RelayGoaways,
    private readonly writer: ClientWriter,
    private readonly frameBudget: ClientFrameBudget,
    private readonly fromUpstream: FrameParser,
    private readonly upstream: UpstreamLink,
  ) {}

  /** A header block on stream `id`, decoded to `list`; `promised`: a PUSH_PROMISE's stream, or 0. */
  headers(id: number, flags: number, block: Buffer, list: HeaderList, promised: number): void {
    this.writer.upstreamBlock(block);
    // A PUSH_PROMISE's block is decoded only to keep the table in step: it is a request, not this stream's response.
    if (promised !== 0) return;
    const stream = this.calls.streams.get(id);
    if (!stream || stream.via) return;
    // The upstream took the call: it is never sent again.
    this.calls.dropBody(stream);
    stream.request = undefined;
    stream.responseHeaders(responseFields(list), this.upstream.connectedAt);
    if (flags & Flag.END_STREAM) this.calls.responseComplete(id, stream);
  }

  /** DATA on stream `id`; `last`: the frame's last piece. */
  data(id: number, chunk: Buffer, flags: number, last: boolean): void {
    if (last) this.frameBudget.dataFrameSent();
    const stream = this.calls.streams.get(id);
    if (last) this.writer.upstreamData(stream, this.fromUpstream.frameLength);
    if (!stream || stream.via) return;
    if (chunk.length > 0) stream.call.tap.responseData(chunk);
    if (last && flags & Flag.END_STREAM) this.calls.responseComplete(id, stream);
  }

  /** The upstream's RST_STREAM on stream `id`, its payload `payload` in `piece` (the upstream's bytes being read). */
  reset(id: number, code: number, payload: Buffer, piece: Buffer | undefined): void {
    const { calls } = this;
    const stream = calls.streams.get(id);
    if (!stream) return;
    // The stream is answered from elsewhere: the upstream's word on it is not for the client.
    if (stream.via) return void (voidFrame(payload, piece) || this.detour.abandon(id, stream));
    // A stream refused while the client held more open than the app allows is the
    // client's doing (RFC 9113 §5.1.2): it reaches the client refused, never sent
    // elsewhere, or the limit would mean nothing.
    if (
      code === Http2Error.REFUSED_STREAM &&
      !stream.responded &&
      !stream.detour?.retried &&
      stream.body &&
      calls.streams.size <= this.frameBudget.advertisedStreamLimit &&
      voidFrame(payload, piece)
    ) {
      return this.detour.retry(id, stream, this.goaways.pastUpstream(id) ? 'goaway' : 'refused_stream');
    }
    // A response that proved its own end (trailers, a status frame in the body) is whole whatever follows.
    if (stream.responseEnded && (code === Http2Error.NO_ERROR || stream.provedEnd())) return calls.end(id, stream);
    calls.end(id, stream, { side: 'upstream', code });
  }

  /**
   * The upstream's GOAWAY named `last`: streams past it were never worked on.
   * `hidden`: the client was kept from reading it (RelayGoaways.fromUpstream),
   * so the relay sends each whole request again, and refuses the rest itself.
   */
  pastLast(last: number, hidden: boolean): void {
    for (const [id, stream] of this.calls.streams) {
      if (id <= last || stream.via) continue;
      if (hidden && !stream.responded && stream.body) this.detour.retry(id, stream, 'goaway');
      else {
        if (hidden) this.writer.send(rstStreamFrame(id, Http2Error.REFUSED_STREAM));
        this.calls.end(id, stream, { side: 'upstream', code: Http2Error.REFUSED_STREAM });
      }
    }
  }
}
