/** How the `protocol` label values of docs/metrics.md are written for people. */
const PROTOCOL_LABELS: Record<string, string> = { grpc: 'gRPC', grpc_web: 'gRPC-Web', connect: 'Connect', rest: 'REST', trpc: 'tRPC' };

export const protocolLabel = (p: string) => PROTOCOL_LABELS[p] ?? p;
