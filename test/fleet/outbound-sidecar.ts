// The outbound sidecar beside a calling app: the app holds one connection to it
// and the sidecar picks an endpoint of the upstream service for every call.
import { parseExposition, sumBy, type Sample } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import type { Backend } from './tcp-balancer.ts';
import { backendKey } from './tcp-balancer.ts';
import type { BalancePolicy } from '../../sidecar/src/config/schema.ts';

export type { BalancePolicy };

export interface OutboundOptions {
  balance: BalancePolicy;
  /** Static endpoints (--endpoints); without them the sidecar resolves --upstream's host. */
  endpoints?: readonly Backend[];
  /** --upstream; default the first endpoint's address (only its scheme and port matter with static endpoints). */
  upstream?: string;
  args?: string[];
}

export interface OutboundSidecar {
  sidecar: SidecarProcess;
  /** `host:port` for a grpc-js client. */
  target: string;
  scrape(): Promise<Sample[]>;
  /** `rpcscope_upstream_calls_total` by `upstream` (`ip:port`). */
  upstreamCalls(): Promise<Record<string, number>>;
  /** `rpcscope_upstream_calls_active` by `upstream`. */
  upstreamActive(): Promise<Record<string, number>>;
  loadSkew(): Promise<number>;
  endpointsKnown(): Promise<number>;
  stop(): Promise<number | null>;
}

export async function startOutboundSidecar(opts: OutboundOptions): Promise<OutboundSidecar> {
  const first = opts.endpoints?.[0];
  const upstream = opts.upstream ?? (first === undefined ? undefined : `http://${backendKey(first)}`);
  if (upstream === undefined) throw new Error('startOutboundSidecar: give endpoints or an upstream');
  const sidecar = await startSidecarProcess(
    [
      '--mode', 'outbound',
      '--upstream', upstream,
      '--balance', opts.balance,
      ...(opts.endpoints === undefined ? [] : ['--endpoints', opts.endpoints.map(backendKey).join(',')]),
      ...(opts.args ?? []),
    ],
    { POD_NAME: `caller-${opts.balance}` },
  );
  const scrape = async (): Promise<Sample[]> => {
    const res = await fetch(`${sidecar.adminUrl}/metrics`);
    return parseExposition(await res.text());
  };
  const gauge = async (name: string): Promise<number> => (await scrape()).find((s) => s.name === name)?.value ?? NaN;
  return {
    sidecar,
    target: `127.0.0.1:${sidecar.port}`,
    scrape,
    upstreamCalls: async () => sumBy(await scrape(), 'rpcscope_upstream_calls_total', ['upstream']),
    upstreamActive: async () => sumBy(await scrape(), 'rpcscope_upstream_calls_active', ['upstream']),
    loadSkew: () => gauge('rpcscope_load_skew_ratio'),
    endpointsKnown: () => gauge('rpcscope_upstream_endpoints'),
    stop: () => sidecar.stop(),
  };
}
