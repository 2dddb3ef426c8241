// Whether outbound HTTP/2 connections go to the balanced relay
// (--outbound-data-plane relay): an endpoint picked per call, frames mapped
// between the client's connection and pooled endpoint connections. What needs a
// call of its own — translation, mirroring, an HTTP/1.1 service — keeps the
// terminating path (node:http2).
import type { Config } from '../config/load.ts';
import { framesEndToEnd, type FrameRelayChoice } from '../relay/relay-applies.ts';

export type BalancedChoice = FrameRelayChoice & Pick<Config, 'outboundDataPlane' | 'mode'>;

export function balancedRelayApplies(config: BalancedChoice): boolean {
  return config.outboundDataPlane === 'relay' && config.mode === 'outbound' && framesEndToEnd(config);
}
