// A client pod that vanishes from the network mid-call (its packets dropped
// both ways at the node: no FIN, no RST): the inbound sidecar it was pinned to
// (terminating data plane) PINGs its quiet connection, gets no answer, and
// closes it — its calls in flight are cancelled toward the app and the
// connection leaves the gauges, instead of staying a ghost in
// rpcscope_calls_active and rpcscope_connections_active for as long as the
// kernel keeps the socket.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sum } from '../support/metrics-text.ts';
import { CLIENT_IP, Cluster, SERVICE } from './cluster.ts';
import { reportFigure } from '../support/reliability-figures.ts';
import { namespacesRefused } from './netns.ts';
import { DETECT_MS, KEEPALIVE, SLACK_MS } from './waits.ts';

const refused = await namespacesRefused();
if (refused !== undefined) console.log(`# test/cluster skipped: ${refused}`);

describe('a client pod blackholed mid-call', { skip: refused }, () => {
  let cluster: Cluster;
  before(async () => {
    cluster = await Cluster.start({ pods: 3, sidecarArgs: ['--data-plane', 'terminate', ...KEEPALIVE] });
  });
  after(async () => {
    await cluster?.stop();
  });

  test('its calls are cancelled upstream and its connection leaves the gauges within the keepalive timeout', { timeout: 60_000 }, async () => {
    // Four calls of 6 s each on the client's one connection through the VIP: all in flight on one pod.
    const load = cluster.client.load({ target: `${SERVICE.vip}:${SERVICE.port}`, protocol: 'grpc', calls: 4, concurrency: 4, delayMs: 6000, deadlineMs: 9000 });
    let pinned: (typeof cluster.pods)[number] | undefined;
    const start = Date.now();
    while (!pinned && Date.now() - start < 5000) {
      for (const pod of cluster.pods) if (sum(await cluster.scrape(pod), 'rpcscope_calls_active') === 4) pinned = pod;
      await sleep(100);
    }
    assert.ok(pinned, 'the four calls in flight on one pod');
    const view = await cluster.debugConnections(pinned);
    assert.equal(view.downstream.list[0]?.peer.split(':')[0], CLIENT_IP);

    const blackholedAt = Date.now();
    await cluster.blackhole(CLIENT_IP);
    let m = await cluster.scrape(pinned);
    while (sum(m, 'rpcscope_connections_active', { side: 'downstream' }) > 0 && Date.now() - blackholedAt < DETECT_MS + SLACK_MS + 3000) {
      await sleep(100);
      m = await cluster.scrape(pinned);
    }
    const goneAfter = Date.now() - blackholedAt;
    reportFigure({ section: 'network-faults', scenario: 'client pod blackholed with 4 calls in flight, inbound terminating sidecar', name: 'its connection out of rpcscope_connections_active, calls cancelled upstream', value: goneAfter, unit: 'ms' });
    assert.equal(sum(m, 'rpcscope_connections_active', { side: 'downstream' }), 0, 'no ghost connection');
    assert.equal(sum(m, 'rpcscope_calls_active'), 0, 'no ghost call');
    assert.ok(goneAfter < DETECT_MS + SLACK_MS, `found after ${goneAfter} ms`);
    assert.equal(sum(m, 'rpcscope_connections_terminated_total', { reason: 'keepalive_timeout' }), 1);
    assert.equal(sum(m, 'rpcscope_keepalive_timeouts_total', { side: 'downstream' }), 1);
    // The four calls ended as the client's going (cancelled toward the app), long before the app's 6 s.
    assert.equal(sum(m, 'rpcscope_calls_total', { direction: 'inbound' }), 4);
    assert.ok(goneAfter < 6000);
    assert.deepEqual((await cluster.debugConnections(pinned)).downstream.list, []);

    await cluster.heal(CLIENT_IP);
    // The client learns of it when its next packet meets a closed connection; its calls end by their deadline at the latest.
    const tally = await load;
    assert.ok(tally.every((t) => t.code !== 'OK'), `the calls cut off by the vanishing did not complete: ${JSON.stringify(tally.map((t) => t.code))}`);
  });
});
