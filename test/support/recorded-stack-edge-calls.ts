// Calls the traffic generator does not make, sent over raw HTTP/2 so that the
// series for rarer events exist on a sidecar: a deadline header it cannot
// parse, an upstream answering DEADLINE_EXCEEDED itself, a client that resets
// its stream once its deadline has passed, and a client closing its session
// (GOAWAY).
//
// The generator's own deadline misses do not serve here: its clients give up
// on their own clocks, which start before the sidecar's, so the sidecar sees
// their reset just inside the deadline (docs/metrics.md then takes the reset's code).
import { connect, constants, type ClientHttp2Session, type OutgoingHttpHeaders } from 'node:http2';

const GET_ORDER = '/order.v1.OrderService/GetOrder';
/** gRPC's DEADLINE_EXCEEDED, as the order service's x-fail-code header takes it. */
const DEADLINE_EXCEEDED = '4';
/** Every edge call answers within a second; past this the sidecar is gone and the session is torn down. */
const BUDGET_MS = 5000;

/** A length-prefixed GetOrderRequest{id} (field 1, length-delimited), as gRPC frames it. */
function getOrderFrame(id: string): Buffer {
  const message = Buffer.concat([Buffer.from([0x0a, id.length]), Buffer.from(id)]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

function grpcCall(session: ClientHttp2Session, headers: OutgoingHttpHeaders, cancelAfterMs?: number): Promise<void> {
  return new Promise((resolve) => {
    if (session.destroyed) return resolve();
    const stream = session.request({
      ':method': 'POST',
      ':path': GET_ORDER,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    stream.on('error', () => {});
    stream.once('close', () => resolve());
    stream.resume();
    stream.end(getOrderFrame('ord-000001'));
    if (cancelAfterMs !== undefined) setTimeout(() => stream.close(constants.NGHTTP2_CANCEL), cancelAfterMs);
  });
}

/** Sends each edge call once through the sidecar at `url`, then closes the session. */
export async function sendEdgeCalls(url: string): Promise<void> {
  const session = connect(url);
  session.on('error', () => {});
  const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
  // Destroying the session closes its streams, so every call below settles.
  const budget = setTimeout(() => session.destroy(), BUDGET_MS);
  try {
    await Promise.all([
      grpcCall(session, { 'grpc-timeout': 'soon' }),
      grpcCall(session, { 'grpc-timeout': '1S', 'x-fail-code': DEADLINE_EXCEEDED }),
      grpcCall(session, { 'grpc-timeout': '50m', 'x-delay-ms': '400' }, 150),
    ]);
  } finally {
    if (!session.destroyed) session.close();
    await closed;
    clearTimeout(budget);
  }
}
