// Which data plane an HTTP/1.1 connection gets. The HTTP/1.1 relay pairs each
// client connection with one upstream connection and passes heads and bodies on
// as bytes: it needs what the HTTP/2 relay needs (inbound, the one fixed
// upstream, no call translated or mirrored), and an upstream spoken to over
// plain HTTP/1.1. Under --upstream-protocol auto or http2, and toward an https://
// upstream, HTTP/1.1 keeps the terminating path (node:http) for now.
import type { Config } from '../config/load.ts';

/** The settings that decide which data plane an HTTP/1.1 connection gets. */
export type H1RelayChoice = Pick<Config, 'http1DataPlane' | 'mode' | 'grpcUpstream' | 'upstream' | 'upstreamProtocol' | 'transcode' | 'grpcWebBridge' | 'split' | 'shadow'>;

/** Whether HTTP/1.1 connections may go to the HTTP/1.1 relay. */
export function h1RelayApplies(config: H1RelayChoice): boolean {
  return (
    config.http1DataPlane === 'relay' &&
    config.mode === 'inbound' &&
    config.grpcUpstream === undefined &&
    config.upstreamProtocol === 'http1' &&
    !config.upstream.tls &&
    !config.transcode &&
    !config.grpcWebBridge &&
    config.split.size === 0 &&
    config.shadow === undefined
  );
}
