// A demo echo upstream in a process of its own, so a benchmark measures the
// sidecar's CPU apart from the upstream's. Prints its URL on stdout.
import { startConnectEcho, startGrpcJsEcho } from '@rpcscope/demo';

const impl = process.argv[2] ?? 'connect';
const upstream = impl === 'grpc-js' ? await startGrpcJsEcho() : await startConnectEcho();
process.stdout.write(`${upstream.url}\n`);
process.on('SIGTERM', () => void upstream.close().then(() => process.exit(0)));
