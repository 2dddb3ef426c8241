// The demo's fleet, a Kubernetes Service in miniature on loopback: three pods
// of the order service, each behind its own inbound sidecar (the real
// sidecar/bin/rpcscope, POD_NAME set as the Downward API would), a
// connection-level TCP balancer in front of the sidecars as kube-proxy is in
// front of a ClusterIP Service, and a calling app's outbound sidecar that
// balances every call over the same three sidecars. The pods share one store,
// as replicas share a database; their sidecars rehearse the move to gRPC
// (--split: a share of REST GetOrder calls transcoded to the pod's gRPC) and
// mirror calls to the service's next version (--shadow: a v2 instance reading
// the same store, which answers one field differently).
import { startOrderService } from './order-server.ts';
import { OrderStore } from './order-store.ts';
import { ORDER_OPERATIONS, PROTO_DIR } from './proto-files.ts';
import { startSidecarProcess, type SidecarProcess } from './sidecar-process.ts';
import { backendKey, startTcpBalancer, type Backend, type TcpBalancer } from './tcp-balancer.ts';
import type { Upstream } from './upstream.ts';

export const NAMESPACE = 'demo';
export const SERVICE = 'orders';
/** The calling app whose outbound sidecar balances per call. */
export const BALANCED_CALLER = 'backoffice-0';
/** Seeded orders: enough for a 1,000-order list; the first 24 are the full 18-field orders. */
const SEED_ORDERS = 1024;
const FULL_ORDERS = 24;
/** A restart should not wait long for calls in flight: the demo's calls are short. */
const DRAIN = ['--drain-timeout', '2s'];
/** The rehearsal: this share of the REST calls of this operation reaches the pod's gRPC through the transcoder. */
export const SPLIT = { operation: 'order.v1.OrderService/GetOrder', percent: 30 } as const;
/** The shadow's pod name (its `x-pod`). */
export const SHADOW_POD = `${SERVICE}-v2`;

export interface DemoPod {
  name: string;
  app: Upstream;
  sidecar: SidecarProcess;
  /** The sidecar's proxy address, the Service's endpoint for this pod. */
  endpoint: Backend;
  /** host:port of the sidecar's admin port, kept across a restart. */
  admin: string;
  /** Flags the sidecar runs with beyond the fixed ones (e.g. --max-connection-age). */
  extraArgs: string[];
  /** stderr of the pod's sidecars replaced by a restart, oldest first. */
  retiredLogs: string[];
}

export interface DemoFleet {
  pods: DemoPod[];
  balancer: TcpBalancer;
  outbound: SidecarProcess;
  /** The next version of the order service, which the pods' sidecars mirror calls to. */
  shadow: Upstream;
  /** stderr of every pod's sidecars so far, the restarted ones' included. */
  podLogs(): string[];
  /** Every sidecar's admin host:port with the labels Prometheus attaches to it. */
  targets(): Array<{ address: string; labels: Record<string, string> }>;
  /**
   * Restarts one pod's sidecar with `extraArgs` on the same ports, as a rollout
   * would: out of the balancer, SIGTERM (GOAWAY, drain), start, back in.
   * `retire` stops the old process (by default SIGTERM and its exit), so a
   * reader can take its last counts on the way; the new one starts after.
   */
  restartSidecar(pod: DemoPod, extraArgs: string[], retire?: (old: SidecarProcess) => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** A pod's sidecar: REST and gRPC both to the pod's app (one port), the split's share transcoded, every call mirrored to the shadow. */
function podArgs(app: Upstream, shadow: Upstream): string[] {
  return [
    ...['--upstream', app.url, '--grpc-upstream', app.url, '--proto', PROTO_DIR, '--operations', ORDER_OPERATIONS],
    ...['--split', `${SPLIT.operation}=${SPLIT.percent}`, '--shadow', shadow.url],
    ...DRAIN,
  ];
}

function inboundArgs(pod: Pick<DemoPod, 'app' | 'endpoint' | 'admin' | 'extraArgs'>, shadow: Upstream): string[] {
  return [...podArgs(pod.app, shadow), '--listen', backendKey(pod.endpoint), '--admin', pod.admin, ...pod.extraArgs];
}

const podEnv = (name: string): Record<string, string> => ({ POD_NAME: name, POD_NAMESPACE: NAMESPACE });

export async function startDemoFleet(podCount = 3): Promise<DemoFleet> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async (): Promise<void> => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
  };
  try {
    const names = Array.from({ length: podCount }, (_, i) => `${SERVICE}-${i}`);
    const pods: DemoPod[] = [];
    const store = new OrderStore(SEED_ORDERS, FULL_ORDERS);
    const shadow = await startOrderService({ podName: SHADOW_POD, store, version: 'v2' });
    cleanups.push(() => shadow.close());
    for (const name of names) {
      const app = await startOrderService({ podName: name, store });
      cleanups.push(() => app.close());
      const sidecar = await startSidecarProcess(podArgs(app, shadow), podEnv(name));
      const pod: DemoPod = {
        name,
        app,
        sidecar,
        endpoint: { host: '127.0.0.1', port: sidecar.port },
        admin: new URL(sidecar.adminUrl).host,
        extraArgs: [],
        retiredLogs: [],
      };
      // The pod's current sidecar, whichever process that is after a restart.
      cleanups.push(() => pod.sidecar.stop());
      pods.push(pod);
    }
    // Round robin, kube-proxy's IPVS default: a client that reconnects moves on to the next pod.
    const balancer = await startTcpBalancer({ backends: pods.map((p) => p.endpoint), pick: 'round_robin' });
    cleanups.push(() => balancer.close());
    const endpoints = pods.map((p) => backendKey(p.endpoint)).join(',');
    const outbound = await startSidecarProcess(
      ['--mode', 'outbound', '--upstream', `http://${backendKey(pods[0]!.endpoint)}`, '--endpoints', endpoints, '--balance', 'round_robin'],
      { POD_NAME: BALANCED_CALLER, POD_NAMESPACE: NAMESPACE },
    );
    cleanups.push(() => outbound.stop());

    return {
      pods,
      balancer,
      outbound,
      shadow,
      podLogs: () => pods.flatMap((p) => [...p.retiredLogs, p.sidecar.log()]),
      targets: () => [
        ...pods.map((p) => ({ address: p.admin, labels: { namespace: NAMESPACE, service: SERVICE, pod: p.name } })),
        { address: new URL(outbound.adminUrl).host, labels: { namespace: NAMESPACE, service: 'backoffice', pod: BALANCED_CALLER } },
      ],
      async restartSidecar(pod, extraArgs, retire = async (old) => void (await old.stop())) {
        balancer.setReady(pod.endpoint, false);
        const old = pod.sidecar;
        try {
          await retire(old);
        } finally {
          await old.stop();
        }
        pod.retiredLogs.push(old.log());
        pod.extraArgs = extraArgs;
        pod.sidecar = await startSidecarProcess(inboundArgs(pod, shadow), podEnv(pod.name));
        balancer.setReady(pod.endpoint, true);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
