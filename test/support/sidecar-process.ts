// The real binary as a child process: shared with the demo, which starts it the same way.
export { RPCSCOPE_BIN, startSidecarProcess, type SidecarProcess } from '@rpcscope/demo/sidecar-process';
