// A Kubernetes node in a box, for tests of what only a real network does: each
// pod a network namespace with its own address on the node's bridge (as the
// bridge CNI plugin gives it), its app (the demo order service, on the pod's
// loopback) and its inbound sidecar (the real sidecar/bin/rpcscope) inside; a
// ClusterIP Service whose virtual IP is DNAT-ed by iptables rules written the
// way kube-proxy's iptables mode writes them (kube-proxy-rules.ts); a headless
// Service's A records answered by dnsmasq on the node; an endpoints controller
// that lets only pods whose readiness probe (the sidecar's /readyz, probed from
// the node as the kubelet does) passes into both; and a client pod. Faults are
// the network's own: a pod blackholed at the node (its packets dropped both
// ways, no FIN, no RST), a link taken down and up.
//
//   node namespace   198.18.0.1 on bridge cbr0; ip_forward, bridge-nf-call-iptables (as kubeadm requires);
//                    nat: KUBE-SERVICES → KUBE-SVC-ORDERS; filter: RPCSCOPE-FAULTS; dnsmasq on :53
//   pod i            198.18.0.(10+i): app 127.0.0.1:8080, sidecar :14001, admin :14090
//   client pod       198.18.0.100: the callers, and an outbound sidecar on 127.0.0.1:15001 if asked for
//   Service VIP      198.19.0.10:80 → the ready pods' :14001
//
// Nothing has a route out of 198.18.0.0/15 (the node has no default route): a
// packet for any other address is refused at the node. Every namespace carries
// the run's prefix (netns.ts); stop() removes them, and the next run sweeps what
// a crashed one left.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseExposition, type Sample } from '../support/metrics-text.ts';
import { AgentProcess, type SidecarStarted } from './agent-process.ts';
import { blackhole, heal, installServiceChains, syncService, type ServicePort } from './kube-proxy-rules.ts';
import { RUN_PREFIX, deleteNamespace, inNs, sh, sweepStale } from './netns.ts';

export const NODE_IP = '198.18.0.1';
export const CLIENT_IP = '198.18.0.100';
export const SERVICE: ServicePort = { name: 'orders', vip: '198.19.0.10', port: 80, targetPort: 14001 };
export const HEADLESS_NAME = 'orders.default.svc.cluster.local';
export const DNS_SERVER = `${NODE_IP}:53`;
export const APP_PORT = 8080;
export const SIDECAR_PORT = 14001;
export const ADMIN_PORT = 14090;
/** The client pod's outbound sidecar. */
export const OUTBOUND_PORT = 15001;
export const OUTBOUND_ADMIN_PORT = 15090;
export const podIp = (i: number): string => `198.18.0.${10 + i}`;

export interface ClusterOptions {
  /** Pods behind the Service; default 3. */
  pods?: number;
  /** Further flags for every pod's inbound sidecar. */
  sidecarArgs?: string[];
  /** The readiness probe (the kubelet's periodSeconds and failureThreshold); default 250 ms and 2. */
  probePeriodMs?: number;
  probeFailureThreshold?: number;
}

export interface ClusterPod {
  name: string;
  ip: string;
  ns: string;
  /** The node-side end of the pod's veth (for link faults). */
  hostVeth: string;
  agent: AgentProcess;
  sidecar: SidecarStarted;
}

export interface OutboundSidecar {
  pid: number;
  /** `127.0.0.1:15001`, for callers inside the client pod. */
  target: string;
  scrape(): Promise<Sample[]>;
  debugConnections(): Promise<DebugConnections>;
}

export interface DebugConnections {
  downstream: { connections: number; calls: number; list: { peer: string; calls: number; calls_active: number }[] };
  upstream: { connections: number; calls: number; list: { peer: string; calls: number; calls_active: number }[] };
  [more: string]: unknown;
}

let clusters = 0;

export class Cluster {
  readonly nodeNs: string;
  readonly pods: ClusterPod[] = [];
  client!: AgentProcess;
  readonly clientNs: string;
  private nodeAgent!: AgentProcess;
  private dnsmasq: ChildProcess | undefined;
  private dnsDir: string | undefined;
  private readonly namespaces: string[] = [];
  private readonly ready = new Map<string, boolean>();
  private readonly probeStreak = new Map<string, number>();
  private probing: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Pods deleted (terminating): out of the endpoints whatever their probe says. */
  private readonly terminating = new Set<string>();
  /** Every change of the ready endpoints, with when it was applied (epoch ms). */
  readonly endpointChanges: { at: number; ready: string[] }[] = [];
  private syncing: Promise<void> = Promise.resolve();

  private constructor(private readonly opts: Required<ClusterOptions>) {
    const tag = `${RUN_PREFIX}c${++clusters}`;
    this.nodeNs = `${tag}-node`;
    this.clientNs = `${tag}-client`;
  }

  static async start(options: ClusterOptions = {}): Promise<Cluster> {
    await sweepStale();
    const cluster = new Cluster({ pods: 3, sidecarArgs: [], probePeriodMs: 250, probeFailureThreshold: 2, ...options });
    try {
      await cluster.build();
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  private podName(i: number): string {
    return `orders-${i}`;
  }

  private async addNamespace(ns: string): Promise<void> {
    await sh('ip', ['netns', 'add', ns]);
    this.namespaces.push(ns);
    await sh('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
  }

  /** A pod's namespace, wired to the node's bridge by a veth pair, its default route through the node. */
  private async addPodNetwork(ns: string, ip: string, hostVeth: string): Promise<void> {
    await this.addNamespace(ns);
    await sh('ip', ['-n', this.nodeNs, 'link', 'add', hostVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    await sh('ip', ['-n', this.nodeNs, 'link', 'set', hostVeth, 'master', 'cbr0', 'up']);
    await sh('ip', ['-n', ns, 'addr', 'add', `${ip}/24`, 'dev', 'eth0']);
    await sh('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await sh('ip', ['-n', ns, 'route', 'add', 'default', 'via', NODE_IP]);
  }

  private async build(): Promise<void> {
    const node = this.nodeNs;
    await this.addNamespace(node);
    await sh('ip', ['-n', node, 'link', 'add', 'cbr0', 'type', 'bridge']);
    await sh('ip', ['-n', node, 'addr', 'add', `${NODE_IP}/24`, 'dev', 'cbr0']);
    await sh('ip', ['-n', node, 'link', 'set', 'cbr0', 'up']);
    // The node routes between pods and the VIP; bridged replies pass through iptables so that
    // conntrack undoes the DNAT on them (what br_netfilter is loaded for on a Kubernetes node).
    await inNs(node, 'sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    await inNs(node, 'sysctl', ['-qw', 'net.bridge.bridge-nf-call-iptables=1']);
    await installServiceChains(node, [SERVICE]);

    const podNs = Array.from({ length: this.opts.pods }, (_, i) => `${node.slice(0, -'node'.length)}${this.podName(i)}`);
    for (let i = 0; i < this.opts.pods; i++) await this.addPodNetwork(podNs[i]!, podIp(i), `veth${i}`);
    await this.addPodNetwork(this.clientNs, CLIENT_IP, 'vethc');

    await this.startDns();
    // Every agent at once: each is a Node process starting tsx.
    const [nodeAgent, client, ...podAgents] = await Promise.all([node, this.clientNs, ...podNs].map((ns) => AgentProcess.start(ns)));
    this.nodeAgent = nodeAgent!;
    this.client = client!;
    await Promise.all(
      podAgents.map(async (agent, i) => {
        const sidecar = await this.startPodContainers(agent, i);
        this.pods.push({ name: this.podName(i), ip: podIp(i), ns: podNs[i]!, hostVeth: `veth${i}`, agent, sidecar });
      }),
    );
    this.pods.sort((a, b) => a.name.localeCompare(b.name));
    this.probe();
    await this.waitReady(this.pods.map((p) => p.name), 20_000);
  }

  private async startPodContainers(agent: AgentProcess, i: number): Promise<SidecarStarted> {
    await agent.startApp('127.0.0.1', APP_PORT, this.podName(i));
    return agent.startSidecar(
      ['--upstream', `http://127.0.0.1:${APP_PORT}`, '--listen', `0.0.0.0:${SIDECAR_PORT}`, '--admin', `0.0.0.0:${ADMIN_PORT}`, ...this.opts.sidecarArgs],
      { POD_NAME: this.podName(i), POD_NAMESPACE: 'default' },
    );
  }

  private async startDns(): Promise<void> {
    this.dnsDir = await mkdtemp(join(tmpdir(), 'rpcscope-cluster-dns-'));
    await writeFile(join(this.dnsDir, 'hosts'), '');
    const bin = process.env.RPCSCOPE_DNSMASQ ?? '/usr/sbin/dnsmasq';
    // The cluster DNS on the node's address: headless Service records from a hosts file, reread on SIGHUP.
    this.dnsmasq = spawn(
      'ip',
      ['netns', 'exec', this.nodeNs, bin, '--no-daemon', '--no-resolv', '--no-hosts', '--listen-address', NODE_IP, '--port', '53', '--bind-interfaces', '--addn-hosts', join(this.dnsDir, 'hosts'), '--pid-file=', '--log-facility=-', '--local-ttl=0'],
      { stdio: ['ignore', 'ignore', 'ignore'] },
    );
  }

  /** The kubelet's readiness probe of every pod, from the node, every period; the endpoints follow it. */
  private probe(): void {
    const round = async (): Promise<void> => {
      await Promise.all(
        this.pods.map(async (pod) => {
          const ok = await this.nodeAgent.fetch(`http://${pod.ip}:${ADMIN_PORT}/readyz`, this.opts.probePeriodMs).then((r) => r.status === 200, () => false);
          const streak = this.probeStreak.get(pod.name) ?? 0;
          // Ready after one success, unready after failureThreshold failures in a row: the kubelet's defaults' shape.
          const next = ok ? Math.max(1, streak + 1) : Math.min(-1, streak - 1);
          this.probeStreak.set(pod.name, next);
          if (ok && this.ready.get(pod.name) !== true) this.ready.set(pod.name, true);
          else if (!ok && next <= -this.opts.probeFailureThreshold && this.ready.get(pod.name) !== false) this.ready.set(pod.name, false);
        }),
      );
      await this.syncEndpoints();
    };
    const tick = (): void => {
      if (this.stopped) return;
      this.probing = setTimeout(() => void round().catch(() => {}).finally(tick), this.opts.probePeriodMs);
    };
    tick();
  }

  /** The ready endpoints, as the endpoints controller publishes them. */
  readyPods(): string[] {
    return this.pods.filter((p) => this.ready.get(p.name) === true && !this.terminating.has(p.name)).map((p) => p.name);
  }

  /** kube-proxy's rules and the headless Service's records for the ready pods, when they changed. */
  private syncEndpoints(): Promise<void> {
    this.syncing = this.syncing.then(async () => {
      const ready = this.readyPods();
      const last = this.endpointChanges.at(-1)?.ready;
      if (last !== undefined && last.join() === ready.join()) return;
      const ips = this.pods.filter((p) => ready.includes(p.name)).map((p) => p.ip);
      await syncService(this.nodeNs, SERVICE, ips);
      await writeFile(join(this.dnsDir!, 'hosts'), ips.map((ip) => `${ip} ${HEADLESS_NAME}\n`).join(''));
      this.dnsmasq?.kill('SIGHUP');
      this.endpointChanges.push({ at: Date.now(), ready });
    });
    return this.syncing;
  }

  /** Waits until exactly `names` are the ready endpoints and the DNS answers them. */
  async waitReady(names: readonly string[], timeoutMs = 10_000): Promise<void> {
    const want = [...names].sort().join();
    const ips = this.pods.filter((p) => names.includes(p.name)).map((p) => p.ip).sort().join();
    const until = Date.now() + timeoutMs;
    for (;;) {
      const dns = await this.client.resolve4(HEADLESS_NAME, DNS_SERVER).catch(() => []);
      if ([...this.readyPods()].sort().join() === want && dns.join() === ips) return;
      if (Date.now() > until) throw new Error(`endpoints ${JSON.stringify(this.readyPods())} (DNS ${JSON.stringify(dns)}) never became ${want} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  pod(name: string): ClusterPod {
    const pod = this.pods.find((p) => p.name === name);
    if (!pod) throw new Error(`no pod ${name}`);
    return pod;
  }

  /** The pod whose IP this is. */
  podByIp(ip: string): ClusterPod | undefined {
    return this.pods.find((p) => p.ip === ip);
  }

  /** A pod's sidecar's /metrics, read inside the pod (its loopback). */
  async scrape(pod: ClusterPod): Promise<Sample[]> {
    const r = await pod.agent.fetch(`http://127.0.0.1:${ADMIN_PORT}/metrics`);
    return parseExposition(r.body);
  }

  /** A pod's sidecar's /debug/connections, read inside the pod, as `kubectl exec` would. */
  async debugConnections(pod: ClusterPod): Promise<DebugConnections> {
    const r = await pod.agent.fetch(`http://127.0.0.1:${ADMIN_PORT}/debug/connections`);
    if (r.status !== 200) throw new Error(`${pod.name} /debug/connections: ${r.status} ${r.body}`);
    return JSON.parse(r.body) as DebugConnections;
  }

  /** An outbound sidecar in the client pod, its calls' upstream the headless Service over the cluster DNS. */
  async startOutbound(args: string[] = []): Promise<OutboundSidecar> {
    const started = await this.client.startSidecar(
      [
        '--mode', 'outbound',
        '--upstream', `http://${HEADLESS_NAME}:${SIDECAR_PORT}`,
        '--dns-server', DNS_SERVER,
        '--listen', `127.0.0.1:${OUTBOUND_PORT}`,
        '--admin', `127.0.0.1:${OUTBOUND_ADMIN_PORT}`,
        ...args,
      ],
      { POD_NAME: 'client' },
    );
    const admin = `http://127.0.0.1:${OUTBOUND_ADMIN_PORT}`;
    return {
      pid: started.pid,
      target: `127.0.0.1:${OUTBOUND_PORT}`,
      scrape: async () => parseExposition((await this.client.fetch(`${admin}/metrics`)).body),
      debugConnections: async () => JSON.parse((await this.client.fetch(`${admin}/debug/connections`)).body) as DebugConnections,
    };
  }

  /** The pod (or the client pod) vanishes from the network: the node drops its packets both ways. */
  async blackhole(ip: string): Promise<void> {
    await blackhole(this.nodeNs, ip);
  }

  async heal(ip: string): Promise<void> {
    await heal(this.nodeNs, ip);
  }

  /** The pod's link at the node goes down (or up): its cable pulled, as a flapping NIC does. */
  async setLink(veth: string, up: boolean): Promise<void> {
    await sh('ip', ['-n', this.nodeNs, 'link', 'set', veth, up ? 'up' : 'down']);
  }

  /**
   * Deletes a pod and starts its replacement, as a Deployment's rolling update
   * does: the pod leaves the endpoints at once (terminating), its sidecar is
   * sent SIGTERM (it keeps serving for its --drain-delay, then drains), the app
   * gets its preStop (a sleep of `preStopMs`) and exits after its sidecar has
   * finished the calls in flight; then the new pod's containers start on the
   * same address and it joins the endpoints once its probe passes.
   */
  async restartPod(name: string, preStopMs: number): Promise<{ sidecarExit: number | null }> {
    const pod = this.pod(name);
    this.terminating.add(name);
    this.ready.set(name, false);
    this.probeStreak.set(name, 0);
    await this.syncEndpoints();
    const exited = new Promise<number | null>((resolve) => pod.agent.onSidecarExit((e) => e.pid === pod.sidecar.pid && resolve(e.code)));
    process.kill(pod.sidecar.pid, 'SIGTERM');
    const [code] = await Promise.all([exited, new Promise((r) => setTimeout(r, preStopMs))]);
    await pod.agent.stopApp();
    const i = this.pods.indexOf(pod);
    pod.sidecar = await this.startPodContainers(pod.agent, i);
    this.terminating.delete(name);
    return { sidecarExit: code };
  }

  /** Memory (VmRSS, KiB) and open descriptors of a process of the cluster (pids are the host's). */
  static async processStats(pid: number): Promise<{ rssKiB: number; fds: number }> {
    const { readFile, readdir } = await import('node:fs/promises');
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const rssKiB = Number(/VmRSS:\s+(\d+)/u.exec(status)?.[1] ?? NaN);
    const fds = (await readdir(`/proc/${pid}/fd`)).length;
    return { rssKiB, fds };
  }

  /** Ends every process and removes every namespace of this cluster, whatever state the test left it in. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.probing);
    await this.syncing.catch(() => {});
    const agents = [this.nodeAgent, this.client, ...this.pods.map((p) => p.agent)].filter((a): a is AgentProcess => a !== undefined);
    await Promise.all(agents.map((a) => a.stop().catch(() => {})));
    if (this.dnsmasq && this.dnsmasq.exitCode === null) this.dnsmasq.kill('SIGKILL');
    for (const ns of this.namespaces.reverse()) await deleteNamespace(ns);
    if (this.dnsDir) await rm(this.dnsDir, { recursive: true, force: true });
  }
}
