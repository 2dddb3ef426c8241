// A pod whose link flaps — down, up, down, every two seconds, for a minute
// (RPCSCOPE_FLAP_MS shortens it) — behind an outbound sidecar under steady
// calls: connections die silently while down, endpoints are ejected and come
// back, calls in flight are cut. No call outlives its deadline, and the outbound
// sidecar's memory and descriptors end where they began.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Cluster, type OutboundSidecar } from './cluster.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { namespacesRefused } from './netns.ts';
import { longest, perCode } from './tally.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

const FLAP_MS = Number(process.env.RPCSCOPE_FLAP_MS ?? 60_000);
const HALF_PERIOD_MS = 2000;
const DEADLINE_MS = 3000;
const KEEPALIVE = ['--keepalive-interval', '1s', '--keepalive-timeout', '1s'];

describe('a flapping link under load', { skip: refused }, () => {
  let cluster: Cluster;
  let outbound: OutboundSidecar;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--data-plane', 'terminate', ...KEEPALIVE] });
    outbound = await cluster.startOutbound(['--balance', 'round_robin', '--resolve-interval', '500ms', '--connect-timeout', '1s', ...KEEPALIVE]);
  });
  after(async () => {
    await cluster?.stop();
  });

  test(`${FLAP_MS / 1000} s of a link going down and up every ${HALF_PERIOD_MS / 1000} s: no call past its deadline, no leak`, { timeout: FLAP_MS + 90_000 }, async () => {
    const flapper = cluster.pods[0]!;
    // Warm: every pod has a pooled connection and the heap has its working set.
    await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 300, concurrency: 4 });
    const start = await Cluster.processStats(outbound.pid);

    const calls = Math.round((FLAP_MS / 1000) * 20);
    const load = cluster.client.load({ target: outbound.target, protocol: 'grpc', calls, concurrency: 4, durationMs: FLAP_MS, delayMs: 100, deadlineMs: DEADLINE_MS });
    let flaps = 0;
    const end = Date.now() + FLAP_MS;
    while (Date.now() < end && flaps < 1000) {
      await cluster.setLink(flapper.hostVeth, false);
      await sleep(HALF_PERIOD_MS);
      await cluster.setLink(flapper.hostVeth, true);
      await sleep(HALF_PERIOD_MS);
      flaps++;
    }
    const tally = await load;
    // Settled: the link up, the endpoint back, a last round of calls, then a moment for closes to land.
    await sleep(3000);
    await cluster.client.load({ target: outbound.target, protocol: 'grpc', calls: 60, concurrency: 3 });
    await sleep(2000);
    const finish = await Cluster.processStats(outbound.pid);
    const scenario = `one pod's link down and up every ${HALF_PERIOD_MS / 1000} s for ${FLAP_MS / 1000} s (${flaps} flaps), outbound sidecar`;
    reportFigure({ section: 'network-faults', scenario, name: `calls (deadline ${DEADLINE_MS / 1000} s)`, value: JSON.stringify(perCode(tally)) });
    reportFigure({ section: 'network-faults', scenario, name: 'longest call', value: longest(tally), unit: 'ms' });
    reportFigure({ section: 'network-faults', scenario, name: 'outbound sidecar RSS before → after', value: `${(start.rssKiB / 1024).toFixed(1)} → ${(finish.rssKiB / 1024).toFixed(1)}`, unit: 'MiB' });
    reportFigure({ section: 'network-faults', scenario, name: 'outbound sidecar file descriptors before → after', value: `${start.fds} → ${finish.fds}` });

    assert.ok(longest(tally) < DEADLINE_MS + 1000, `a call took ${longest(tally)} ms, deadline ${DEADLINE_MS}`);
    assert.deepEqual(Object.keys(perCode(tally)).filter((c) => !['OK', 'UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(c)), []);
    assert.ok((perCode(tally).OK ?? 0) > calls * 0.8, `most calls went to the steady pods: ${JSON.stringify(perCode(tally))}`);
    assert.ok(finish.fds <= start.fds + 4, `descriptors ${start.fds} -> ${finish.fds}`);
    assert.ok(finish.rssKiB < start.rssKiB + 40 * 1024, `RSS ${start.rssKiB} -> ${finish.rssKiB} KiB`);
  });
});
