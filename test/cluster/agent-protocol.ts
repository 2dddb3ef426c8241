// The messages between the test process and the agent in each namespace
// (pod-agent.ts), over the IPC channel `ip netns exec` hands through.

export interface LoadSpec {
  /** `host:port` as seen from inside the pod: the Service VIP, a pod IP, or 127.0.0.1 for an outbound sidecar. */
  target: string;
  protocol: 'grpc' | 'rest';
  calls: number;
  concurrency?: number;
  /** Spreads the calls over about this long; default as fast as they go. */
  durationMs?: number;
  /** Each call's deadline (gRPC) or timeout (REST); default 10 s. */
  deadlineMs?: number;
  /** The order service's x-delay-ms: service time added to each call. */
  delayMs?: number;
  /** Each worker on a channel (a connection) of its own, as `concurrency` separate client processes would be. */
  connectionPerWorker?: boolean;
}

/** One call as the client saw it: its status (gRPC code name, or HTTP status), the pod that answered (x-pod), epoch ms. */
export interface CallTally {
  n: number;
  /** The worker that made it (with connectionPerWorker, its connection). */
  worker: number;
  code: string;
  pod: string;
  start: number;
  end: number;
  /** A failed call's status message or socket error, for a failing test to say why. */
  detail?: string;
}

export type AgentRequest =
  | { op: 'startApp'; host: string; port: number; podName: string }
  | { op: 'stopApp' }
  | { op: 'startSidecar'; args: string[]; env: Record<string, string> }
  | { op: 'sidecarLog' }
  | { op: 'fetch'; url: string; timeoutMs?: number; method?: string }
  | { op: 'resolve'; name: string; server: string }
  | { op: 'load'; spec: LoadSpec }
  | { op: 'closeClients' };

export type AgentEvent = { event: 'ready'; pid: number } | { event: 'sidecarExit'; pid: number; code: number | null; signal: string | null };
