// PINGs one end sent the other through the relay that await their ACK, one
// ledger per direction (client-writer.ts). The app's PINGs to the client: a
// client's PING ACK that answers none of them, nor the relay's own keepalive
// PING, is one RFC 9113 §6.7 says to ignore (h2spec 6.7/2), and the relay
// ignores it for the app, which may not — Node's HTTP/2 core, under many apps,
// ends the connection on an ACK it never asked for. The client's PINGs to the
// app: those the app leaves unanswered when it goes (GOAWAY, then close) the
// relay answers, as it answers every PING after (§6.7: every PING gets its ACK).
// PINGs are few (keepalive), so a short list does.

/** How many PINGs are kept awaiting their ACKs; past it, the oldest is forgotten, and every ACK taken for an answer. */
const MAX_OPEN_PINGS_KEPT = 16;

export class PingLedger {
  /** The opaque data of the PINGs not yet acknowledged, oldest first. */
  private readonly open: Buffer[] = [];
  /** More were open than are kept: an ACK that matches none may answer one forgotten. */
  private forgot = false;

  /** A PING (not an ACK) with `opaque` went through. */
  sent(opaque: Buffer): void {
    if (this.open.length === MAX_OPEN_PINGS_KEPT) {
      this.open.shift();
      this.forgot = true;
    }
    this.open.push(Buffer.from(opaque));
  }

  /** An ACK with `opaque`: whether it answers one of the PINGs (or may answer one forgotten), and so goes on. */
  acked(opaque: Buffer): boolean {
    const at = this.open.findIndex((b) => b.equals(opaque));
    if (at < 0) return this.forgot;
    this.open.splice(at, 1);
    return true;
  }

  /** The PINGs still unanswered, oldest first; the ledger is left empty. */
  drain(): Buffer[] {
    return this.open.splice(0);
  }
}
