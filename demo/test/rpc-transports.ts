// Every connect-node client transport the sidecar meets, with what its protocol
// can carry over its HTTP version, so one test list can run over all of them.
import type { Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';

export type RpcTransport = {
  name: string;
  /** gRPC is the only one the grpc-js server speaks. */
  protocol: 'connect' | 'grpc' | 'grpc-web';
  /** Bidi streams need both directions open at once, which only HTTP/2 gives connect-node. */
  bidi: boolean;
  make(baseUrl: string): Transport;
};

export const rpcTransports: RpcTransport[] = [
  {
    name: 'Connect proto over HTTP/1.1',
    protocol: 'connect',
    bidi: false,
    make: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '1.1' }),
  },
  {
    name: 'Connect JSON over HTTP/2',
    protocol: 'connect',
    bidi: true,
    make: (baseUrl) => createConnectTransport({ baseUrl, httpVersion: '2', useBinaryFormat: false }),
  },
  {
    name: 'gRPC over HTTP/2',
    protocol: 'grpc',
    bidi: true,
    make: (baseUrl) => createGrpcTransport({ baseUrl }),
  },
  {
    name: 'gRPC-Web over HTTP/1.1',
    protocol: 'grpc-web',
    bidi: false,
    make: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '1.1' }),
  },
  {
    name: 'gRPC-Web over HTTP/2',
    protocol: 'grpc-web',
    bidi: true,
    make: (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: '2' }),
  },
];
