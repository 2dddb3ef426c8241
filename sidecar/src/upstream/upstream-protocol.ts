// Which HTTP version the sidecar speaks to each upstream endpoint: fixed by
// --upstream-protocol / --grpc-upstream-protocol, or, with `auto`, the caller's
// own version where the endpoint speaks it and the other one where it does not.
// What an endpoint speaks is asked once per endpoint (host:port) and version,
// and remembered, as Envoy's auto upstream protocol remembers ALPN; it is
// forgotten when the endpoint cannot be reached or drops a call unanswered, so an
// app redeployed with another server is asked again.
import type { UpstreamProtocolMode } from '../config/load.ts';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Logger } from '../log.ts';
import type { HttpVersion } from '../protocol/vocabulary.ts';

/** Whether `target` speaks `version`; undefined when it could not be reached. */
export type Probe = (target: UpstreamUrl, version: HttpVersion) => Promise<boolean | undefined>;

const FIXED: Record<Exclude<UpstreamProtocolMode, 'auto'>, HttpVersion> = { http1: '1.1', http2: '2' };
const OTHER: Record<HttpVersion, HttpVersion> = { '1.1': '2', '2': '1.1' };

export interface UpstreamProtocolModes {
  upstream: UpstreamProtocolMode;
  /** For calls of the gRPC family when they go to their own --grpc-upstream. */
  grpcUpstream: UpstreamProtocolMode | undefined;
}

/** What one endpoint is known to speak. */
type Speaks = Partial<Record<HttpVersion, boolean>>;

export class UpstreamProtocols {
  private readonly known = new Map<string, Speaks>();
  private readonly asking = new Map<string, Promise<unknown>>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly modes: UpstreamProtocolModes,
    private readonly probe: Probe,
    private readonly log: Logger,
  ) {}

  /** The version to speak to `target` for a caller speaking `callerVersion`; undefined until it is learned. */
  versionFor(target: UpstreamUrl, grpcFamily: boolean, callerVersion: HttpVersion): HttpVersion | undefined {
    const mode = grpcFamily && this.modes.grpcUpstream !== undefined ? this.modes.grpcUpstream : this.modes.upstream;
    if (mode !== 'auto') return FIXED[mode];
    const speaks = this.known.get(target.authority)?.[callerVersion];
    return speaks === undefined ? undefined : speaks ? callerVersion : OTHER[callerVersion];
  }

  /** Ask whether the endpoint speaks `version`; concurrent callers share one probe. */
  learn(target: UpstreamUrl, version: HttpVersion): Promise<unknown> {
    const key = `${target.authority} ${version}`;
    let pending = this.asking.get(key);
    if (pending) return pending;
    pending = this.probe(target, version).then((yes) => {
      this.asking.delete(key);
      if (yes === undefined) return;
      // An endpoint that does not speak one version must speak the other: calls get there either way.
      const speaks: Speaks = yes ? { ...this.known.get(target.authority), [version]: true } : { [version]: false, [OTHER[version]]: true };
      this.known.set(target.authority, speaks);
      this.log.info('upstream HTTP versions learned', { upstream: target.authority, http1: speaks['1.1'], http2: speaks['2'] });
    });
    this.asking.set(key, pending);
    return pending;
  }

  /** The endpoint failed a call unanswered: what it speaks is asked again next time. */
  forget(target: UpstreamUrl): void {
    this.known.delete(target.authority);
  }

  /**
   * An HTTP/1.1 request to the endpoint got an answer that is not HTTP/1.x: an
   * HTTP/2-only app in cleartext. Its callers' next calls go over HTTP/2.
   */
  notHttp1(target: UpstreamUrl): void {
    this.known.set(target.authority, { '1.1': false, '2': true });
    this.log.warn('the upstream does not speak HTTP/1.1: HTTP/1.1 callers go over HTTP/2 from now on', { upstream: target.authority });
  }

  /** A gRPC call met an HTTP/1.1-only endpoint: said once per endpoint, not once per call. */
  grpcRefused(target: UpstreamUrl): void {
    if (this.warned.has(target.authority)) return;
    this.warned.add(target.authority);
    this.log.warn(GRPC_NEEDS_H2, { upstream: target.authority });
  }
}

export const GRPC_NEEDS_H2 = 'the upstream speaks only HTTP/1.1; gRPC needs HTTP/2 end to end';
