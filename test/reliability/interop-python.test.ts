// Interop with gRPC C-core (Debian's python3-grpcio) on both sides of the real
// binary: a grpcio client and a grpcio server (interop/interop_python.py), the
// cases of interop/interop-suite.ts. sidecar/test/proxy/repeated-fields.test.ts
// already has a grpc-js client call a grpcio server; this adds C-core's client:
// its deadline, its cancel, and what it reads from headers and trailers.
import { describeInterop } from './interop/interop-suite.ts';

describeInterop('python', 'python');
