// The figures behind the sticky-HTTP/2 work, measured on the loopback fleet:
// per-pod shares and skew for one HTTP/2 client behind a connection balancer,
// before and after --max-connection-age, and behind an outbound sidecar with
// each --balance policy.
//
//   node --import tsx test/fleet/figures.ts
//
// Prints a table; asserts nothing (the *.test.ts files do).
import { pollUntil, startFleet, type Fleet } from './fleet.ts';
import { OrderClient } from './order-client.ts';
import { startOutboundSidecar, type BalancePolicy } from './outbound-sidecar.ts';
import { BALANCE_POLICIES } from '../../sidecar/src/config/schema.ts';
import { clientThroughBalancer, clientThroughOutbound, podSkew, sharesOf, slowMixThroughOutbound } from './scenarios.ts';

const PODS = 3;
const CALLS = 300;

interface Row {
  scenario: string;
  shares: Record<string, number>;
  /** max / mean of the calls per pod. */
  skew: number;
  note: string;
}

const rows: Row[] = [];
const pct = (x: number): string => `${(x * 100).toFixed(1)} %`;

/** The recorded cross-pod skew once Prometheus holds the sidecars' counts and two scrapes of every series (rate needs two). */
async function recordedSkew(fleet: Fleet): Promise<string> {
  await fleet.waitForPrometheus('rpcscope_calls_total', { direction: 'inbound' });
  await pollUntil(
    () => fleet.prometheus!.query(`count_over_time(rpcscope_calls_total{direction="inbound",namespace="${fleet.namespace}"}[1m]) < 2`),
    (young) => young.length === 0,
    10_000,
    'two scrapes of every calls series',
  );
  const got = await fleet.recorded('namespace_service:rpcscope_calls_total:pod_skew2m', Date.now());
  return got[0] === undefined ? 'none' : Number(got[0].value[1]).toFixed(2);
}

async function inboundScenarios(): Promise<void> {
  const fleet = await startFleet({ pods: PODS, prometheus: true });
  try {
    const run = await clientThroughBalancer(fleet, { calls: CALLS, durationMs: 6000 });
    const skewCold = await recordedSkew(fleet);
    // One call to each pod directly, as another caller would have made: now every pod has a series.
    for (const pod of fleet.pods) {
      const c = new OrderClient(`${pod.endpoint.host}:${pod.endpoint.port}`);
      await c.getOrder('ord-000001');
      c.close();
    }
    const skewWarm = await recordedSkew(fleet);
    rows.push({
      scenario: '1 sticky: grpc-js via TCP balancer',
      shares: sharesOf(fleet, run.perPod),
      skew: podSkew(fleet, run.perPod),
      note: `${run.connections} conn, ${run.load.perCode.OK ?? 0}/${CALLS} OK; Prometheus pod_skew2m ${skewCold} (idle pods never called) -> ${skewWarm} (every pod called once)`,
    });
  } finally {
    await fleet.stop();
  }

  const aged = await startFleet({ pods: PODS, sidecarArgs: ['--max-connection-age', '1s'] });
  try {
    const run = await clientThroughBalancer(aged, { calls: CALLS, durationMs: 10_000, delayMs: 20 });
    rows.push({
      scenario: '2 --max-connection-age 1s, ~10 s',
      shares: sharesOf(aged, run.perPod),
      skew: podSkew(aged, run.perPod),
      note: `${run.connections} conn, ${run.goaways} GOAWAY, ${run.load.perCode.OK ?? 0}/${CALLS} OK`,
    });
  } finally {
    await aged.stop();
  }
}

async function outboundScenarios(): Promise<void> {
  const fleet = await startFleet({ pods: PODS });
  const endpoints = fleet.pods.map((p) => p.endpoint);
  try {
    for (const balance of BALANCE_POLICIES) {
      const outbound = await startOutboundSidecar({ balance, endpoints });
      try {
        const run = await clientThroughOutbound(fleet, outbound, { calls: CALLS });
        rows.push({
          scenario: `${balance === 'sticky' ? 4 : 3} outbound --balance ${balance}`,
          shares: sharesOf(fleet, run.perPod),
          skew: podSkew(fleet, run.perPod),
          note: `1 client conn, ${run.load.perCode.OK ?? 0}/${CALLS} OK; rpcscope_load_skew_ratio ${run.loadSkew.toFixed(3)}`,
        });
      } finally {
        await outbound.stop();
      }
    }
    // The slow mix: each policy on a fresh sidecar, so its skew window holds only this run.
    for (const balance of ['round_robin', 'least_request', 'ewma'] as const satisfies readonly BalancePolicy[]) {
      const outbound = await startOutboundSidecar({ balance, endpoints });
      try {
        const run = await slowMixThroughOutbound(outbound, { calls: CALLS, intervalMs: 10, slowMs: 300 });
        const ok = run.results.filter((r) => r.code === 'OK').length;
        const peaks = fleet.pods.map((p) => run.peakInFlight[`${p.endpoint.host}:${p.endpoint.port}`] ?? 0);
        rows.push({
          scenario: `3 slow mix (1 in 3 calls 300 ms) ${balance}`,
          shares: sharesOf(fleet, run.slowPerPod),
          skew: podSkew(fleet, run.slowPerPod),
          note: `shares of the slow calls; peak in flight per pod ${peaks.join('/')}; ${ok}/${CALLS} OK; load_skew_ratio ${run.loadSkew.toFixed(3)}`,
        });
      } finally {
        await outbound.stop();
      }
    }
  } finally {
    await fleet.stop();
  }
}

function print(): void {
  const pods = Array.from({ length: PODS }, (_, i) => `orders-${i}`);
  const header = ['scenario', ...pods, 'max/mean', 'notes'];
  const body = rows.map((r) => [r.scenario, ...pods.map((p) => pct(r.shares[p] ?? 0)), r.skew.toFixed(2), r.note]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join(' | ');
  console.log(line(header));
  console.log(widths.map((w, i) => '-'.repeat(i === widths.length - 1 ? 5 : w)).join('-|-'));
  for (const b of body) console.log(line(b));
}

await inboundScenarios();
await outboundScenarios();
print();
