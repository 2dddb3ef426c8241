// The kube-proxy stand-in lives with the demo, which runs the same fleet for `npm run demo`.
export * from '@rpcscope/demo/tcp-balancer';
