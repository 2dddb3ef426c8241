// Interop through an outbound sidecar's balanced relay (--mode outbound
// --outbound-data-plane relay), where rpcscope speaks HTTP/2 itself on both hops
// and encodes every header block anew: grpc-go and gRPC C-core (grpcio) clients
// and servers, every case compared with the same call made without the sidecar
// (interop/interop-suite.ts).
import { describeInterop } from './interop/interop-suite.ts';

describeInterop('go', 'go', 'balanced');
describeInterop('go', 'python', 'balanced');
describeInterop('python', 'go', 'balanced');
