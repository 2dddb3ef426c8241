// How many PING and SETTINGS frames a client connection may send. Each one
// obliges the server to write an ACK (RFC 9113 §6.5.3, §6.7), so a flood of
// them is work the client makes the server do for nothing. nghttp2 (in Node)
// gives up on a session once 1000 ACKs are queued unwritten and ends it with
// GOAWAY INTERNAL_ERROR; these budgets trip first and answer ENHANCE_YOUR_CALM,
// the code RFC 9113 §5.4.1 gives for a peer generating excessive load.
//
// Honest clients stay far below: gRPC keepalives come seconds apart, a BDP
// estimator keeps one PING outstanding at a time, and a client sends SETTINGS
// a handful of times per connection.

import { TokenBucket } from './token-bucket.ts';

/** Frame type → burst allowed at once, then per second (a token bucket). */
export const CONTROL_FRAME_BUDGETS = {
  ping: { burst: 200, perSecond: 50 },
  settings: { burst: 50, perSecond: 5 },
} as const;

/** One frame type's budget on one connection. */
export class ControlFrameBudget extends TokenBucket {}
