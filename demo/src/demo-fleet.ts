// The demo's fleet, a Kubernetes Service in miniature on loopback: three pods
// of the order service, each behind its own inbound sidecar (the real
// sidecar/bin/rpcscope, POD_NAME set as the Downward API would), a
// connection-level TCP balancer in front of the sidecars as kube-proxy is in
// front of a ClusterIP Service, and a calling app's outbound sidecar that
// balances every call over the same three sidecars.
import { startOrderService } from './order-server.ts';
import { PROTO_DIR } from './proto-files.ts';
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
}

export interface DemoFleet {
  pods: DemoPod[];
  balancer: TcpBalancer;
  outbound: SidecarProcess;
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

function inboundArgs(pod: Pick<DemoPod, 'app' | 'endpoint' | 'admin' | 'extraArgs'>): string[] {
  return ['--upstream', pod.app.url, '--listen', backendKey(pod.endpoint), '--admin', pod.admin, '--proto', PROTO_DIR, ...DRAIN, ...pod.extraArgs];
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
    for (const name of names) {
      const app = await startOrderService({ podName: name, seedOrders: SEED_ORDERS, fullOrders: FULL_ORDERS });
      cleanups.push(() => app.close());
      const sidecar = await startSidecarProcess(['--upstream', app.url, '--proto', PROTO_DIR, ...DRAIN], podEnv(name));
      const pod: DemoPod = {
        name,
        app,
        sidecar,
        endpoint: { host: '127.0.0.1', port: sidecar.port },
        admin: new URL(sidecar.adminUrl).host,
        extraArgs: [],
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
        pod.extraArgs = extraArgs;
        pod.sidecar = await startSidecarProcess(inboundArgs(pod), podEnv(pod.name));
        balancer.setReady(pod.endpoint, true);
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
