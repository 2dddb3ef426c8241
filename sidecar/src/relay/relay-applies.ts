// Which data plane an HTTP/2 connection gets. The relay passes frames through
// to one upstream connection and so cannot do what needs a call of its own on
// the upstream side: pick an upstream per call (outbound balancing, which the
// balanced relay does: relay-balanced/balanced-applies.ts; --grpc-upstream),
// speak HTTP/1.1 to the upstream, or hand calls to a translating path
// (--transcode, --grpc-web-bridge, --split, --shadow). Those keep the
// terminating path (node:http2). Tracing does not: the relay writes the
// client's header blocks anew to inject a traceparent (translate mode).
import type { Config } from '../config/load.ts';

/** The settings that decide which data plane an HTTP/2 connection gets. */
export type RelayChoice = FrameRelayChoice & Pick<Config, 'dataPlane' | 'mode'>;

/** The settings under which no call needs an upstream call of its own (and so a relay, 1:1 or balanced, may carry them). */
export type FrameRelayChoice = Pick<Config, 'grpcUpstream' | 'upstreamProtocol' | 'transcode' | 'grpcWebBridge' | 'split' | 'shadow'>;

/**
 * Whether every HTTP/2 call may stay frames end to end: none goes to a second
 * upstream, none is translated or mirrored, and the upstream is not spoken to
 * over HTTP/1.1 (under `auto`, what it speaks is learned per connection:
 * RelaySet.add, BalancedRelaySet.add).
 */
export function framesEndToEnd(config: FrameRelayChoice): boolean {
  return (
    config.grpcUpstream === undefined &&
    config.upstreamProtocol !== 'http1' &&
    // Calls that are translated or mirrored are answered call by call.
    !config.transcode &&
    !config.grpcWebBridge &&
    config.split.size === 0 &&
    config.shadow === undefined
  );
}

/**
 * Whether HTTP/2 connections may go to the relay. The relay needs an upstream
 * that speaks HTTP/2 (h2c for http://, ALPN h2 for https://): --upstream-protocol
 * http1 rules it out here, and under `auto` each connection waits for what the
 * upstream is learned to speak (RelaySet.add).
 */
export function relayApplies(config: RelayChoice): boolean {
  return config.dataPlane === 'relay' && config.mode === 'inbound' && framesEndToEnd(config);
}
