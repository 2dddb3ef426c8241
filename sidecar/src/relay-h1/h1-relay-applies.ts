// Which data plane an HTTP/1.1 connection gets. The HTTP/1.1 relay pairs each
// client connection with one upstream connection and passes heads and bodies on
// as bytes: it needs inbound mode, no mirror (--shadow watches every plain
// call), and an upstream spoken to over HTTP/1.1. Unlike HTTP/2's, it
// chooses per request too: a call that needs a call of its own upstream
// (transcoded, bridged, its share of a split, or gRPC-family while
// --grpc-upstream is set) hands its connection to the terminating path at that
// request's head (H1RelayConnection.needsOwnCall). With --upstream-protocol http1 every connection is relayed;
// with auto (the default) each is relayed while the app is known to speak
// HTTP/1.1, and the callers of an HTTP/2-only app keep the terminating path,
// which translates their calls (H1RelaySet.add decides per connection). Toward
// an https:// upstream it is relayed over TLS, verified against --upstream-ca,
// with ALPN http/1.1 (relay/upstream-connect.ts). Under --upstream-protocol
// http2 HTTP/1.1 keeps the terminating path (node:http).
import type { Config } from '../config/load.ts';

/** The settings that decide which data plane an HTTP/1.1 connection gets. */
export type H1RelayChoice = Pick<Config, 'http1DataPlane' | 'mode' | 'upstreamProtocol' | 'shadow'>;

/** Whether HTTP/1.1 connections may go to the HTTP/1.1 relay. */
export function h1RelayApplies(config: H1RelayChoice): boolean {
  return (
    config.http1DataPlane === 'relay' &&
    config.mode === 'inbound' &&
    config.upstreamProtocol !== 'http2' &&
    config.shadow === undefined
  );
}
