// How many streams a client connection may reset before the proxy reads them.
// A stream reset in the same read as its HEADERS is the rapid-reset shape
// (CVE-2023-44487): it costs the server work and does nothing for the client.
// Honest clients cancel too, so it is a token bucket, not a cap.
//
// nghttp2 (in Node) keeps its own bucket over every RST_STREAM received —
// burst 1000, 33 per second — and answers with GOAWAY INTERNAL_ERROR; this one
// counts only the streams reset before they were handled, trips first (a smaller
// burst), and answers ENHANCE_YOUR_CALM, the code RFC 9113 §5.4.1 gives for a
// peer generating excessive load.
const BURST = 200;
const PER_SECOND = 33;

export class ResetBudget {
  private tokens = BURST;
  private last: number;

  constructor(private readonly clock: () => number, now = clock()) {
    this.last = now;
  }

  /** Takes one token; false once the connection has spent more than its budget. */
  spend(): boolean {
    const t = this.clock();
    this.tokens = Math.min(BURST, this.tokens + ((t - this.last) / 1000) * PER_SECOND);
    this.last = t;
    if (this.tokens < 1) return false;
    this.tokens--;
    return true;
  }
}
