// The sidecar assembled, top to bottom: listen -> protocol -> route -> proxy ->
// observe, plus the admin port. Reading this file tells what runs and in what order.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createAdminServer, listenAdmin } from './admin/admin-server.ts';
import type { Config } from './config/load.ts';
import { ProxyListener } from './listen/listener.ts';
import type { Logger } from './log.ts';
import type { CallTracing } from './observe/call-tracing.ts';
import { composeObservers, type Observer } from './observe/observer.ts';
import type { ProxyContext } from './proxy/context.ts';
import { H1AgentPool } from './proxy/h1-agent-pool.ts';
import { H2SessionPool } from './proxy/h2-session-pool.ts';

export interface Sidecar {
  proxyAddress: AddressInfo;
  adminAddress: AddressInfo;
  /** Stop accepting, GOAWAY, wait up to the drain timeout for calls in flight, then close. */
  drain(): Promise<{ unfinished: number }>;
}

export interface Plugins {
  observers: Observer[];
  tracing: CallTracing;
  adminHandlers: Map<string, http.RequestListener>;
}

export async function startSidecar(config: Config, log: Logger, plugins: Plugins): Promise<Sidecar> {
  let callIds = 0;
  let connIds = 0;
  const nextConnId = (): number => ++connIds;
  const observer = composeObservers(plugins.observers);

  const ctx: ProxyContext = {
    config,
    observer,
    tracing: plugins.tracing,
    log,
    h2: new H2SessionPool(observer, log, config.connectTimeoutMs, config.upstreamCa, nextConnId),
    h1: new H1AgentPool(observer, config.connectTimeoutMs, config.upstreamCa, nextConnId),
    inflight: new Set(),
    nextCallId: () => ++callIds,
  };

  const listener = new ProxyListener(ctx, nextConnId);
  let draining = false;
  let listening = false;
  const admin = createAdminServer({ ready: () => listening && !draining, handlers: plugins.adminHandlers });
  const adminAddress = await listenAdmin(admin, config.admin);
  const proxyAddress = await listener.listen(config.listen);
  listening = true;

  return {
    proxyAddress,
    adminAddress,
    async drain() {
      draining = true;
      const accepting = listener.drain();
      const deadline = Date.now() + config.drainTimeoutMs;
      while (ctx.inflight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const unfinished = ctx.inflight.size;
      listener.destroy();
      await accepting;
      ctx.h2.close();
      ctx.h1.close();
      await new Promise<void>((resolve) => admin.close(() => resolve()));
      return { unfinished };
    },
  };
}
