// Entry point of the demo image's order service: one replica of the demo
// OrderService (gRPC, gRPC-Web, Connect and REST on one port), as a pod or a
// compose service runs it. HOST, PORT and POD_NAME come from the environment.
import { startOrderService } from '../../demo/src/order-server.ts';

const host = process.env.HOST ?? '0.0.0.0';
const port = Number(process.env.PORT ?? '8080');
const podName = process.env.POD_NAME;

const server = await startOrderService({ host, port, ...(podName ? { podName } : {}) });
process.stdout.write(`${JSON.stringify({ msg: 'order service listening', url: server.url, pod: podName ?? null })}\n`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    void server.close().then(() => process.exit(0));
  });
}
