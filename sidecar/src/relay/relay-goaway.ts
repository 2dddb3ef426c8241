// What the GOAWAYs of one relayed connection said (RFC 9113 §6.8): the
// upstream's — the last stream it takes, and whether the client was kept from
// reading it — and the relay's own toward the client — whether one went, and
// the two-step drain for --max-connection-age and SIGTERM, past whose second
// step new streams are refused. The connection (relay-connection.ts) keeps the
// phases, and the timer between the two steps.
import { Http2Error } from '../protocol/reset-codes.ts';
import type { ProxyContext } from '../upstream/context.ts';
import { MAX_STREAM_ID } from '../h2/frame-types.ts';
import type { ClientWriter } from './client-writer.ts';
import { voidFrame } from './frame-rewrite.ts';
import { goawayFrame } from '../h2/frames.ts';
import type { ClientStreamStates } from './stream-states.ts';

/**
 * The relay's two-step GOAWAY (RFC 9113 §6.8): the first names the highest
 * stream id, so that streams already on their way are relayed and answered
 * (none is taken for unprocessed and sent twice); a moment later the second
 * names the last stream seen, and streams past it are refused (REFUSED_STREAM,
 * which clients retry on a new connection). Their HEADERS still reach the
 * upstream — dropping a header block would break its HPACK table — followed at
 * once by RST_STREAM CANCEL (LocalEndings.refuse).
 */
export class RelayGoaways {
  /** The last stream id of the upstream's GOAWAY: streams above it go elsewhere. */
  upstreamLast: number | undefined;
  /** The upstream's GOAWAY was kept from the client (see voidFrame): its connection goes on. */
  upstreamHidden = false;
  /** The relay sent the client a GOAWAY of its own. */
  sent = false;
  /** Past the second GOAWAY: the connection closes once its last call ends. */
  draining = false;
  /** After the second GOAWAY: streams past this id are refused. */
  private refuseAbove = MAX_STREAM_ID;

  /** @param states the client's streams, whose last opened one a GOAWAY names */
  constructor(private readonly ctx: ProxyContext, private readonly writer: ClientWriter, private readonly states: ClientStreamStates) {}

  /**
   * The upstream's GOAWAY, its payload `payload` in `piece` (the upstream's bytes
   * being read): whether it is kept from the client. A graceful GOAWAY (a
   * restart, a max connection age) is the upstream's business: the client's
   * connection goes on, its new calls sent elsewhere. Any other code says the
   * connection itself went wrong, perhaps by the client's doing, and the client
   * reads it: hiding it would let a client shed the app's limits and go on over
   * the relay's own connections. Where a GOAWAY cannot be hidden, the client
   * reads it and retries what it names itself.
   */
  fromUpstream(last: number, code: number, payload: Buffer, piece: Buffer | undefined): boolean {
    this.ctx.observer.goaway('upstream', code);
    const hidden = code === Http2Error.NO_ERROR && voidFrame(payload, piece) && (this.upstreamLast === undefined || this.upstreamHidden);
    this.upstreamHidden = hidden;
    this.upstreamLast = Math.min(last, this.upstreamLast ?? MAX_STREAM_ID);
    return hidden;
  }

  /** Stream `id` is past the last one the upstream's GOAWAY said it takes. */
  pastUpstream(id: number): boolean {
    return this.upstreamLast !== undefined && id > this.upstreamLast;
  }

  /** Stream `id` opened past the second step of the drain: refused. */
  refuses(id: number): boolean {
    return id > this.refuseAbove;
  }

  /** The relay's GOAWAY with `code` that ends the connection, naming the last stream the client opened; the caller writes it. */
  last(code: number): Buffer {
    this.sent = true;
    this.ctx.observer.goaway('proxy', code);
    return goawayFrame(this.states.last, code);
  }

  /** The drain's first step: GOAWAY naming the highest stream id. False, and nothing sent, once a GOAWAY went. */
  first(): boolean {
    if (this.sent) return false;
    this.sent = true;
    this.ctx.observer.goaway('proxy', Http2Error.NO_ERROR);
    this.writer.send(goawayFrame(MAX_STREAM_ID, Http2Error.NO_ERROR));
    return true;
  }

  /** The drain's second step: GOAWAY naming the last stream the client opened; streams past it are refused. */
  second(): void {
    this.refuseAbove = this.states.last;
    this.draining = true;
    this.writer.send(goawayFrame(this.refuseAbove, Http2Error.NO_ERROR));
  }
}
