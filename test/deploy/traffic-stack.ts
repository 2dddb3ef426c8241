// The fleet that the "every expression returns data" tests point Prometheus
// at: admin addresses of sidecars carrying traffic, with the target labels
// Kubernetes service discovery would attach (deploy/README.md, "Labels").
//
// INTERIM: until the sidecar's exporter and the demo fleet are in place, the
// targets are synthetic sidecars (synthetic-sidecar.ts): real HTTP servers
// serving METRICS.md-shaped series that grow per scrape. The intended stack,
// to be swapped in here without touching the tests, is the one
// docker-compose.yml describes: three demo order services each behind an
// inbound sidecar, a client behind an outbound sidecar, and the traffic
// generator driving it, all on 127.0.0.1 ports, with each sidecar's admin
// address returned as a target.
import { loadContract } from './metrics-contract.ts';
import type { ScrapeTarget } from './prometheus.ts';
import { startSyntheticSidecar } from './synthetic-sidecar.ts';

export interface TrafficStack {
  targets: ScrapeTarget[];
  /** True while the targets are stand-ins rather than real sidecars. */
  synthetic: boolean;
  stop(): Promise<void>;
}

// orders-0 takes four times the calls of each other pod: a skew of 2, as
// sticky HTTP/2 connections would leave it.
const FLEET = [
  { namespace: 'demo', service: 'orders', pod: 'orders-0', weight: 4 },
  { namespace: 'demo', service: 'orders', pod: 'orders-1', weight: 1 },
  { namespace: 'demo', service: 'orders', pod: 'orders-2', weight: 1 },
  { namespace: 'demo', service: 'client', pod: 'client-0', weight: 1 },
];

export async function startTrafficStack(): Promise<TrafficStack> {
  const contract = loadContract();
  const sidecars = await Promise.all(FLEET.map((p) => startSyntheticSidecar(contract, p.weight)));
  return {
    synthetic: true,
    targets: FLEET.map((p, i) => ({
      address: sidecars[i]?.address ?? '',
      labels: { namespace: p.namespace, service: p.service, pod: p.pod },
    })),
    async stop() {
      await Promise.all(sidecars.map((s) => s.close()));
    },
  };
}
