// A demo upstream in a process of its own, so a benchmark measures the
// sidecar's CPU apart from the upstream's. Prints its URL on stdout.
//   echo (connect-node, default) | grpc-js (echo) | order (the order service,
//   gRPC and REST, no simulated service time, every order the full 18-field one)
import { startConnectEcho, startGrpcJsEcho, startOrderService } from '@rpcscope/demo';

const impl = process.argv[2] ?? 'connect';
const upstream =
  impl === 'grpc-js' ? await startGrpcJsEcho() : impl === 'order' ? await startOrderService({ latencyScale: 0, seedOrders: 24, fullOrders: 24 }) : await startConnectEcho();
process.stdout.write(`${upstream.url}\n`);
process.on('SIGTERM', () => void upstream.close().then(() => process.exit(0)));
