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
import { TokenBucket, type BucketLimit } from './token-bucket.ts';

const RESET_LIMIT: BucketLimit = { burst: 200, perSecond: 33 };

export class ResetBudget extends TokenBucket {
  constructor(clock: () => number, now = clock()) {
    super(RESET_LIMIT, clock, now);
  }
}
