// /debug/connections: a live view, like gRPC's channelz, of every open
// connection on both sides — who, how old, which HTTP, how many calls it has
// carried and carries now, and its share of the side's calls. A few connections
// with most of the share is the sticky-HTTP/2 signature.
import type http from 'node:http';
import { performance } from 'node:perf_hooks';
import { noopObserver, type ConnectionRecord, type Observer } from '../call/observer.ts';
import type { EndpointView } from '../upstream/balancer/upstreams.ts';

export interface ConnectionsView {
  observer: Observer;
  handler: http.RequestListener;
}

/** `endpoints`: the balancer's endpoints and whether each is ejected (outbound), listed after the connections. */
export function createConnectionsView(endpoints: () => EndpointView[] = () => []): ConnectionsView {
  const open = new Set<ConnectionRecord>();
  const describe = (side: ConnectionRecord['side'], now: number) => {
    const conns = [...open].filter((c) => c.side === side).sort((a, b) => b.calls - a.calls);
    const total = conns.reduce((n, c) => n + c.calls, 0);
    return {
      connections: conns.length,
      calls: total,
      list: conns.map((c) => ({
        id: c.id,
        peer: c.peer,
        http_version: c.httpVersion,
        age_seconds: Math.round((now - c.openTime) / 100) / 10,
        calls: c.calls,
        calls_active: c.active,
        share: total === 0 ? 0 : Math.round((c.calls / total) * 1000) / 1000,
      })),
    };
  };
  return {
    observer: {
      ...noopObserver,
      connectionOpened: (c) => open.add(c),
      connectionClosed: (c) => open.delete(c),
    },
    handler: (_req, res) => {
      const now = performance.now();
      res.writeHead(200, { 'content-type': 'application/json' });
      const known = endpoints();
      res.end(JSON.stringify({ downstream: describe('downstream', now), upstream: describe('upstream', now), ...(known.length > 0 ? { endpoints: known } : {}) }, null, 2) + '\n');
    },
  };
}
