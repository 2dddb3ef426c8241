// The client's frames on its open calls, past their first header block: request
// trailers, request DATA (held while the call may be sent again, passed to a
// call sent over the detour), RST_STREAM, and stream WINDOW_UPDATEs. Once no
// upstream keeps the connection's window (detached), the relay opens it again
// itself for what the client sends. Frames on streams that are no open call are
// answered by the client's stream states (stream-states.ts).
import { Http2Error } from '../protocol/reset-codes.ts';
import { Flag } from '../h2/frame-types.ts';
import { windowUpdateFrame } from '../h2/frames.ts';
import type { ClientWriter } from './client-writer.ts';
import type { ClientFrameBudget } from './frame-budget.ts';
import type { FrameParser } from './frame-parser.ts';
import type { HeaderList, HpackDecoder } from './hpack-decoder.ts';
import type { LocalEndings } from './local-endings.ts';
import type { RelayCalls } from './relay-calls.ts';
import type { RelayDetour } from './relay-detour.ts';
import type { Phase } from './relay-phase.ts';
import type { RelayStream } from './relay-stream.ts';
import type { UpstreamWriter } from './upstream-writer.ts';

export class ClientRequests {
  constructor(
    private readonly calls: RelayCalls,
    private readonly detour: RelayDetour,
    private readonly endings: LocalEndings,
    private readonly writer: ClientWriter,
    private readonly toUpstream: UpstreamWriter,
    private readonly requestHpack: HpackDecoder,
    private readonly fromClient: FrameParser,
    private readonly frameBudget: ClientFrameBudget,
  ) {}

  /** A header block, decoded to `list`, on the open call `stream`: request trailers, unless the request was over. */
  trailers(id: number, stream: RelayStream, flags: number, block: Buffer, list: HeaderList): void {
    if (stream.requestEnded) this.calls.states.afterEnd(id, 'HEADERS');
    this.toUpstream.rewrite(id, flags, block, list, undefined);
    if (this.requestHpack.overflowed) return this.endings.refuseTrailers(id, stream);
    if (flags & Flag.END_STREAM) this.calls.requestComplete(id, stream);
  }

  /** DATA on stream `id`; `last`: the frame's last piece. */
  data(id: number, chunk: Buffer, flags: number, last: boolean, phase: Phase): void {
    const stream = this.calls.streams.get(id);
    this.calls.states.data(id, stream);
    // What of the frame is not data (its padding, §6.1) counts against the windows too.
    const padding = last ? this.fromClient.dataPadding : 0;
    // No upstream keeps the connection's window any more: the relay does.
    const connection = phase === 'detached';
    if (!stream || !stream.via) {
      if (connection && chunk.length + padding > 0) this.writer.send(windowUpdateFrame(0, chunk.length + padding));
      if (!stream) return;
    }
    if (chunk.length > 0) {
      stream.call.tap.requestData(chunk);
      this.calls.requestData(stream, chunk);
      if (stream.via) this.detour.write(id, stream.via, chunk, connection);
    }
    // The upstream that would open this stream's window again no longer has it: the relay does.
    if (stream.via && padding > 0) this.detour.credit(id, padding, connection);
    if (last && flags & Flag.END_STREAM) {
      stream.via?.end();
      this.calls.requestComplete(id, stream);
    }
  }

  /** RST_STREAM on stream `id`: false if it makes a rapid-reset flood (frame-budget.ts), which ends the connection. */
  reset(id: number, code: number): boolean {
    const stream = this.calls.streams.get(id);
    if (!stream) {
      this.calls.states.control(id, 'RST_STREAM');
      return true;
    }
    if (stream.via && !stream.via.closed) stream.via.close(code === Http2Error.NO_ERROR ? Http2Error.CANCEL : code);
    // Once the response is whole, a reset only stops the request side (RFC 9113 §8.1).
    if (stream.responseEnded) {
      this.calls.end(id, stream);
      return true;
    }
    this.calls.end(id, stream, { side: 'client', code });
    // A stream the client resets before its answer is what a rapid-reset flood is made of.
    return this.frameBudget.streamReset();
  }

  /** WINDOW_UPDATE on stream `id` (not 0): the client's window for an open call, which the relay's own DATA fits in. */
  windowUpdate(id: number, increment: number): void {
    const stream = this.calls.streams.get(id);
    if (stream) stream.clientWindow += increment;
    else this.calls.states.control(id, 'WINDOW_UPDATE');
  }
}
