// A ClusterIP Service as kube-proxy's iptables mode writes it, in the node's
// namespace: KUBE-SERVICES (jumped to from PREROUTING, for traffic from pods,
// and OUTPUT, for the node's own) sends the VIP:port to KUBE-SVC-<name>, whose
// rules pick an endpoint per new connection with `-m statistic --mode random`
// — the first with probability 1/n, the next 1/(n-1) of the rest, the last
// always — and DNAT to it through KUBE-SEP-<n>. conntrack keeps every later
// packet of the connection on the endpoint chosen: HTTP/2's one long-lived
// connection is pinned to one pod for its whole life, which is the skew
// rpcscope shows. The Service chain is written anew, atomically
// (iptables-restore --noflush), whenever the ready endpoints change, as
// kube-proxy's sync does.
//
// Blackholes live in a chain of their own (RPCSCOPE-FAULTS, from FORWARD): the
// node drops a pod's packets both ways, and nothing tells either end.
import { inNs } from './netns.ts';

export interface ServicePort {
  /** `orders` gives KUBE-SVC-ORDERS. */
  name: string;
  vip: string;
  port: number;
  targetPort: number;
}

const svcChain = (s: ServicePort): string => `KUBE-SVC-${s.name.toUpperCase()}`;
const sepChain = (s: ServicePort, i: number): string => `KUBE-SEP-${s.name.toUpperCase()}-${i}`;
export const FAULTS_CHAIN = 'RPCSCOPE-FAULTS';

/** The chains and jumps made once per node, and each Service's jump into its chain. */
export async function installServiceChains(nodeNs: string, services: readonly ServicePort[]): Promise<void> {
  const rules = [
    '*nat',
    ':KUBE-SERVICES - [0:0]',
    ...services.map((s) => `:${svcChain(s)} - [0:0]`),
    '-A PREROUTING -j KUBE-SERVICES',
    '-A OUTPUT -j KUBE-SERVICES',
    ...services.map((s) => `-A KUBE-SERVICES -d ${s.vip}/32 -p tcp -m tcp --dport ${s.port} -j ${svcChain(s)}`),
    'COMMIT',
    '*filter',
    `:${FAULTS_CHAIN} - [0:0]`,
    `-I FORWARD -j ${FAULTS_CHAIN}`,
    'COMMIT',
    '',
  ].join('\n');
  await inNs(nodeNs, 'iptables-restore', ['--noflush'], rules);
}

/** The rules kube-proxy writes for `endpoints` (pod IPs), in order: what `syncService` applies. */
export function serviceRules(service: ServicePort, endpoints: readonly string[]): string {
  const svc = svcChain(service);
  const lines = ['*nat', `:${svc} - [0:0]`];
  const n = endpoints.length;
  endpoints.forEach((_, i) => lines.push(`:${sepChain(service, i)} - [0:0]`));
  endpoints.forEach((ip, i) => {
    const left = n - i;
    // Each rule takes its share of what the rules before it left: 1/3, then 1/2 of the rest, then all.
    const statistic = left > 1 ? `-m statistic --mode random --probability ${(1 / left).toFixed(11)} ` : '';
    lines.push(`-A ${svc} -p tcp ${statistic}-j ${sepChain(service, i)}`);
    lines.push(`-A ${sepChain(service, i)} -p tcp -m tcp -j DNAT --to-destination ${ip}:${service.targetPort}`);
  });
  lines.push('COMMIT', '');
  return lines.join('\n');
}

/**
 * Writes the Service's chain anew for these endpoints. Endpoint chains of an
 * earlier sync that are no longer jumped to are left empty-named: harmless, and
 * gone with the namespace.
 */
export async function syncService(nodeNs: string, service: ServicePort, endpoints: readonly string[]): Promise<void> {
  // No ready endpoint: the chain is left empty, the VIP is routed nowhere (the node has no route out), and a
  // client is told at once (ICMP unreachable), as kube-proxy's REJECT tells it.
  await inNs(nodeNs, 'iptables-restore', ['--noflush'], serviceRules(service, endpoints));
}

/** Drops every packet to or from `ip` at the node, both ways: the pod's node vanished from the network. */
export async function blackhole(nodeNs: string, ip: string): Promise<void> {
  await inNs(nodeNs, 'iptables', ['-A', FAULTS_CHAIN, '-s', `${ip}/32`, '-j', 'DROP']);
  await inNs(nodeNs, 'iptables', ['-A', FAULTS_CHAIN, '-d', `${ip}/32`, '-j', 'DROP']);
}

/** Takes the blackhole of `ip` away: its packets flow again. */
export async function heal(nodeNs: string, ip: string): Promise<void> {
  await inNs(nodeNs, 'iptables', ['-D', FAULTS_CHAIN, '-s', `${ip}/32`, '-j', 'DROP']).catch(() => {});
  await inNs(nodeNs, 'iptables', ['-D', FAULTS_CHAIN, '-d', `${ip}/32`, '-j', 'DROP']).catch(() => {});
}
