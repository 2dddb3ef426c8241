// Interop with grpc-go (Debian's golang-google-grpc-dev, built here: see
// interop/peers.ts) through the real binary: a grpc-go client and a grpc-go
// server, and each of them with gRPC C-core (grpcio) on the other side.
// Unary, server streaming, repeated metadata keys (text and -bin) in both
// directions, headers and trailers, an error status with a non-ASCII message,
// a deadline exceeded and a cancel, each compared with the same call made
// without the sidecar.
import { describeInterop } from './interop/interop-suite.ts';

describeInterop('go', 'go');
describeInterop('go', 'python');
describeInterop('python', 'go');
