// Where a relayed connection stands, and the moves between phases it may make:
// read by the connection (relay-connection.ts), which alone moves it, and by its
// parts that act by it (the detour, the admission, the client's requests).

/**
 * Where the connection is. Only `enter` moves it, and only along these:
 *
 *   connecting → open      the upstream's socket is up (over TLS, it agreed to h2)
 *   connecting → local     it could not be reached: the relay answers the calls itself
 *   open → lost            its connection broke under calls in flight: the relay ends
 *                          them in their own protocol's words before the client's goes
 *   open → detached        it went gracefully (GOAWAY, then close): the client's
 *                          connection goes on, its calls sent on connections of the
 *                          relay's own (relay-detour.ts)
 *   any but closed → closed
 *
 * Bytes go to the upstream only while connecting (held) and open.
 */
export type Phase = 'connecting' | 'open' | 'local' | 'lost' | 'detached' | 'closed';
export const NEXT: Readonly<Record<Phase, readonly Phase[]>> = {
  connecting: ['open', 'local', 'closed'],
  open: ['lost', 'detached', 'closed'],
  local: ['closed'],
  lost: ['closed'],
  detached: ['closed'],
  closed: [],
};
