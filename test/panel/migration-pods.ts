// Two pods the recorded stack (test/support/recorded-stack.ts) does not have, for the panel's
// tRPC and transcoded columns: the order operations served over tRPC (@trpc/server's standalone
// adapter, called with @trpc/client's httpLink and httpBatchLink) behind a sidecar whose
// operations file maps each procedure onto its RPC method, so that it lines up with the
// fleet's gRPC and REST calls; and REST callers served by the demo order service's gRPC through
// a sidecar's JSON transcoder (--transcode). Traffic runs until stop().
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { createTRPCClient, httpBatchLink, httpLink } from '@trpc/client';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { startOrderService } from '@rpcscope/demo';
import type { ScrapeTarget } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const PROTO_DIR = join(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..'), 'demo', 'proto');
/** An order the demo order service holds from the start. */
const ORDER_ID = 'ord-000001';
/** Each caller's pause between calls: a few calls a second per caller, a light load beside the fleet's. */
const PAUSE_MS = 150;

const t = initTRPC.create();
const router = t.router({
  order: t.router({
    getOrder: t.procedure.input((v) => v as { id: string }).query(async ({ input }) => {
      await sleep(2 + Math.random() * 6);
      if (!input.id.startsWith('ord-')) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such order' });
      return { id: input.id, items: [{ sku: 'tea', quantity: 1 }] };
    }),
    listOrders: t.procedure.query(async () => {
      await sleep(4 + Math.random() * 8);
      return { orders: [{ id: ORDER_ID }] };
    }),
  }),
});

// The operations file: each procedure is the RPC method's operation, as the fleet's .proto rules
// make the REST routes.
const OPERATIONS = `operations:
  order.v1.OrderService/GetOrder:
    - trpc order.getOrder
  order.v1.OrderService/ListOrders:
    - trpc order.listOrders
`;

export interface MigrationPods {
  targets: ScrapeTarget[];
  stop(): Promise<void>;
}

async function loop(stopped: AbortSignal, call: () => Promise<unknown>): Promise<void> {
  while (!stopped.aborted) {
    // A failed call is traffic too (a NOT_FOUND counts as much as an OK).
    await call().catch(() => {});
    await sleep(PAUSE_MS, undefined, { signal: stopped }).catch(() => {});
  }
}

export async function startMigrationPods(labels: { namespace: string; service: string }): Promise<MigrationPods> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const stopped = new AbortController();
  const traffic: Promise<void>[] = [];
  const stop = async (): Promise<void> => {
    stopped.abort();
    await Promise.all(traffic);
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
  };
  try {
    const dir = await mkdtemp(join(tmpdir(), 'rpcscope-panel-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const operations = join(dir, 'operations.yaml');
    await writeFile(operations, OPERATIONS);

    const trpcApp = createHTTPServer({ router, basePath: '/trpc/' });
    await new Promise<void>((r) => trpcApp.listen(0, '127.0.0.1', r));
    cleanups.push(async () => {
      trpcApp.closeAllConnections();
      await new Promise((r) => trpcApp.close(r));
    });
    const orderApp = await startOrderService({ podName: `${labels.service}-transcode` });
    cleanups.push(() => orderApp.close());

    const start = async (pod: string, args: string[]): Promise<SidecarProcess> => {
      const sidecar = await startSidecarProcess(args, { POD_NAME: pod, POD_NAMESPACE: labels.namespace });
      cleanups.push(() => sidecar.stop());
      const kill = (): void => {
        sidecar.proc.kill('SIGKILL');
      };
      process.once('exit', kill);
      cleanups.push(async () => process.off('exit', kill));
      return sidecar;
    };
    const trpcPod = `${labels.service}-trpc`;
    const transcodePod = `${labels.service}-transcode`;
    const [trpcSidecar, transcodeSidecar] = await Promise.all([
      start(trpcPod, ['--upstream', `http://127.0.0.1:${(trpcApp.address() as AddressInfo).port}`, '--operations', operations]),
      start(transcodePod, ['--upstream', orderApp.url, '--proto', PROTO_DIR, '--transcode']),
    ]);

    const url = `${trpcSidecar.url}/trpc`;
    const single = createTRPCClient<typeof router>({ links: [httpLink({ url })] });
    const batched = createTRPCClient<typeof router>({ links: [httpBatchLink({ url })] });
    traffic.push(
      loop(stopped.signal, () => single.order.getOrder.query({ id: ORDER_ID })),
      loop(stopped.signal, () =>
        Promise.allSettled([batched.order.getOrder.query({ id: ORDER_ID }), batched.order.listOrders.query(), batched.order.getOrder.query({ id: 'x' })])
      ),
      loop(stopped.signal, async () => (await fetch(`${transcodeSidecar.url}/v1/orders/${ORDER_ID}`)).arrayBuffer()),
      loop(stopped.signal, async () => (await fetch(`${transcodeSidecar.url}/v1/orders`)).arrayBuffer())
    );
    return {
      targets: [
        { address: new URL(trpcSidecar.adminUrl).host, labels: { ...labels, pod: trpcPod } },
        { address: new URL(transcodeSidecar.adminUrl).host, labels: { ...labels, pod: transcodePod } },
      ],
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
