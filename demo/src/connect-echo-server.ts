import { Code, ConnectError } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { EchoService } from './gen/echo/v1/echo_pb.ts';
import { echoConnectService } from './echo-connect-service.ts';
import { handleEchoRest } from './echo-rest-routes.ts';
import { listenH2c } from './h2c-listener.ts';
import type { HttpRequest, HttpResponse } from './h2c-listener.ts';
import { DEFAULT_HOST, upstreamUrl } from './upstream.ts';
import type { ListenOptions, Upstream } from './upstream.ts';
import { websocketEcho } from './websocket-echo.ts';

/**
 * EchoService over Connect, gRPC and gRPC-Web (connect-node), plus the REST
 * routes and the WebSocket echo at /v1/ws, on one port for HTTP/1.1 and h2c.
 */
export async function startConnectEcho(opts: ListenOptions = {}): Promise<Upstream> {
  const host = opts.host ?? DEFAULT_HOST;
  const shutdown = new AbortController();
  const rpc = connectNodeAdapter({
    routes: (router) => router.service(EchoService, echoConnectService),
    shutdownSignal: shutdown.signal,
  });
  const ws = websocketEcho('/v1/ws');
  const server = await listenH2c({
    host,
    port: opts.port ?? 0,
    onRequest: (req: HttpRequest, res: HttpResponse) => {
      if (!handleEchoRest(req, res, shutdown.signal)) rpc(req, res);
    },
    onUpgrade: ws.onUpgrade,
  });
  return {
    host,
    port: server.port,
    url: upstreamUrl(host, server.port),
    async close() {
      shutdown.abort(new ConnectError('server closing', Code.Unavailable));
      ws.terminateAll();
      await server.close();
    },
  };
}
