// The PINGs the app sent the client that await its ACK. A client's PING ACK
// that answers none of them, nor the relay's own keepalive PING, is one RFC 9113
// §6.7 says to ignore (h2spec 6.7/2): the relay ignores it for the app, which
// may not — Node's HTTP/2 core, under many apps, ends the connection on an ACK
// it never asked for. PINGs are few (keepalive), so a short list does.
/** How many of the app's PINGs are kept awaiting their ACKs; a client that leaves more unanswered has all its ACKs passed on. */
const MAX_OPEN_PINGS_KEPT = 16;

export class AppPings {
  /** The opaque data of the app's PINGs not yet acknowledged, oldest first. */
  private readonly open: Buffer[] = [];
  /** More were open than are kept: an ACK that matches none may answer one forgotten, so it goes on. */
  private forgot = false;

  /** The app sent the client a PING (not an ACK) with `opaque`. */
  sent(opaque: Buffer): void {
    if (this.open.length === MAX_OPEN_PINGS_KEPT) {
      this.open.shift();
      this.forgot = true;
    }
    this.open.push(Buffer.from(opaque));
  }

  /** The client's PING ACK with `opaque`: whether it answers one of the app's PINGs, and so goes on to the app. */
  acked(opaque: Buffer): boolean {
    const at = this.open.findIndex((b) => b.equals(opaque));
    if (at < 0) return this.forgot;
    this.open.splice(at, 1);
    return true;
  }
}
