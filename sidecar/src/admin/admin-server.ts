// The admin port: liveness, readiness and, when observation is on, /metrics.
// Kept apart from the proxy port so that probes and scrapes never queue behind
// proxied traffic and are never themselves observed as calls.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HostPort } from '../config/parse-value.ts';

export interface AdminRoutes {
  /** Called with an error a handler threw; the request gets a 500 and the port keeps serving. */
  onFault?(err: unknown): void;
  /** Serving traffic and not draining. */
  ready(): boolean;
  /** Extra handlers by path (e.g. /metrics, /debug/connections). */
  handlers: ReadonlyMap<string, http.RequestListener>;
  /** Asked before any /debug/* handler: false when it has answered the request itself (401, 403). */
  admitDebug?(req: http.IncomingMessage, res: http.ServerResponse): boolean;
}

export function createAdminServer(routes: AdminRoutes): http.Server {
  return http.createServer((req, res) => {
    const fail = (err: unknown): void => {
      routes.onFault?.(err);
      if (res.headersSent) res.destroy();
      else res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error\n');
    };
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path === '/readyz') {
      const ready = routes.ready();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'text/plain' }).end(ready ? 'ready\n' : 'draining\n');
      return;
    }
    const handler = routes.handlers.get(path);
    if (handler) {
      if (path.startsWith('/debug/') && routes.admitDebug?.(req, res) === false) return;
      try {
        // A handler that returns a promise (the exporter's) fails there, not by throwing.
        const pending = handler(req, res) as unknown;
        if (pending instanceof Promise) pending.catch((err: unknown) => fail(err));
      } catch (err) {
        fail(err);
      }
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found; try ${['/healthz', '/readyz', ...routes.handlers.keys()].join(', ')}\n`);
  });
}

export function listenAdmin(server: http.Server, at: HostPort): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(at.port, at.host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}
