// Outbound discovery as on Kubernetes with a headless Service: the outbound
// sidecar resolves the Service's name at a real DNS server (dnsmasq) every
// 500 ms and balances over the A records. Pods join and leave during load:
// no call is lost, a new pod gets calls, a removed pod finishes what it has
// and gets nothing more.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDnsServer, type DnsServer } from './dns-server.ts';
import { pollUntil, startFleet, type Fleet, type FleetPod } from './fleet.ts';
import { OrderClient, sendLoad } from './order-client.ts';
import { startOutboundSidecar, type OutboundSidecar } from './outbound-sidecar.ts';
import { backendKey } from './tcp-balancer.ts';

const NAME = 'orders.test';
let fleet: Fleet;
let dns: DnsServer;
let outbound: OutboundSidecar;

before(async () => {
  fleet = await startFleet({ pods: 3 });
  const [p0, p1] = fleet.pods;
  dns = await startDnsServer({ [NAME]: [p0!.ip, p1!.ip] });
  outbound = await startOutboundSidecar({
    balance: 'round_robin',
    upstream: `http://${NAME}:${fleet.sidecarPort}`,
    args: ['--dns-server', dns.address, '--resolve-interval', '500ms'],
  });
});

after(async () => {
  await outbound?.stop();
  await dns?.stop();
  await fleet?.stop();
});

test('endpoints found by DNS join and leave during load without a lost call', { timeout: 60_000 }, async () => {
  const [p0, p1, p2] = fleet.pods as [FleetPod, FleetPod, FleetPod];
  const inbound = (): Promise<Record<string, number>> => fleet.perPod('rpcscope_calls_total', { direction: 'inbound' });
  const endpointsIs = (n: number): Promise<number> => pollUntil(() => outbound.endpointsKnown(), (v) => v === n, 5000, `rpcscope_upstream_endpoints == ${n}`);
  await endpointsIs(2);

  // About 9 s of calls, four at a time, each 50 ms at the pod, so calls are in flight at every change.
  const client = new OrderClient(outbound.target);
  const load = sendLoad(client, { calls: 300, concurrency: 4, durationMs: 9000, delayMs: 50 });

  await sleep(2500);
  const beforeAdd = await inbound();
  await dns.setRecords({ [NAME]: [p0.ip, p1.ip, p2.ip] });
  await endpointsIs(3);

  await sleep(2500);
  await dns.setRecords({ [NAME]: [p1.ip, p2.ip] });
  await endpointsIs(2);
  // The removed pod's calls in flight finish (50 ms each); after that it gets nothing.
  await sleep(500);
  const afterRemove = await inbound();

  const result = await load;
  client.close();
  const end = await inbound();

  assert.deepEqual(result.perCode, { OK: 300 }, 'no call lost');
  assert.equal(beforeAdd[p2.name], 0, 'the pod not yet in DNS had no calls');
  assert.ok((end[p2.name] ?? 0) > 0, `the added pod got calls: ${JSON.stringify(end)}`);
  assert.ok((afterRemove[p0.name] ?? 0) > 0, 'the removed pod had calls before');
  assert.equal(end[p0.name], afterRemove[p0.name], `the removed pod got no call after it left DNS: ${JSON.stringify({ afterRemove, end })}`);
  assert.ok((end[p1.name] ?? 0) > (afterRemove[p1.name] ?? 0) && (end[p2.name] ?? 0) > (afterRemove[p2.name] ?? 0), 'the remaining pods took the rest');

  // The outbound sidecar's series name the same endpoints, and it closed its connections to the removed one.
  const perEndpoint = await outbound.upstreamCalls();
  for (const pod of fleet.pods) assert.equal(perEndpoint[backendKey(pod.endpoint)], end[pod.name], `rpcscope_upstream_calls_total for ${pod.name}`);
  await pollUntil(
    () => outbound.scrape(),
    (m) => !m.some((s) => s.name === 'rpcscope_upstream_connections_active' && s.labels.upstream === backendKey(p0.endpoint) && s.value > 0),
    5000,
    'no open connection to the removed endpoint',
  );
});
