// Which data plane an HTTP/2 connection gets. The relay passes frames through
// to one upstream connection and so cannot do what needs a call of its own on
// the upstream side: pick an upstream per call (outbound balancing,
// --grpc-upstream), speak HTTP/1.1 to the upstream, or hand calls to a
// translating path (--transcode, --grpc-web-bridge, --split, --shadow). Those
// keep the terminating path (node:http2). Tracing does not: the relay writes the
// client's header blocks anew to inject a traceparent (translate mode).
import type { Config } from '../config/load.ts';

/** The settings that decide which data plane an HTTP/2 connection gets. */
export type RelayChoice = Pick<Config, 'dataPlane' | 'mode' | 'grpcUpstream' | 'upstreamProtocol' | 'transcode' | 'grpcWebBridge' | 'split' | 'shadow'>;

/**
 * Whether HTTP/2 connections may go to the relay. The relay needs an upstream
 * that speaks HTTP/2 (h2c for http://, ALPN h2 for https://): --upstream-protocol
 * http1 rules it out here, and under `auto` each connection waits for what the
 * upstream is learned to speak (RelaySet.add).
 */
export function relayApplies(config: RelayChoice): boolean {
  return (
    config.dataPlane === 'relay' &&
    config.mode === 'inbound' &&
    config.grpcUpstream === undefined &&
    // An upstream spoken to over HTTP/1.1 needs each call translated. Under
    // `auto`, what the upstream speaks is learned per connection (RelaySet.add).
    config.upstreamProtocol !== 'http1' &&
    // Calls that are translated or mirrored are answered call by call.
    !config.transcode &&
    !config.grpcWebBridge &&
    config.split.size === 0 &&
    config.shadow === undefined
  );
}
