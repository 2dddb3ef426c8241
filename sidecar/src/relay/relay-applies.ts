// Which data plane an HTTP/2 connection gets. The relay passes frames through
// to one upstream connection and so cannot do what needs a call of its own on
// the upstream side: pick an upstream per call (outbound balancing,
// --grpc-upstream) or inject a traceparent. Those keep the terminating path
// (node:http2) for now.
import type { Config } from '../config/load.ts';

/**
 * Whether HTTP/2 connections go to the relay. Kept in one place so that the
 * upstream's protocol, once known per endpoint, can be consulted here too (the
 * relay assumes the upstream speaks HTTP/2: h2c for http://, ALPN h2 for https://).
 */
export function relayApplies(config: Config, tracing: boolean): boolean {
  return (
    config.dataPlane === 'relay' &&
    config.mode === 'inbound' &&
    config.grpcUpstream === undefined &&
    !tracing
  );
}
