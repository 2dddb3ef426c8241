// The exposition parser lives with the demo, whose terminal view reads the sidecars' /metrics with it.
export * from '@rpcscope/demo/metrics-text';
