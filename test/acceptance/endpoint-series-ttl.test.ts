// An outbound sidecar drops the rpcscope_upstream_* series of an endpoint that
// left: its name resolves (at a real DNS server, dnsmasq) to two pods on their
// own loopback addresses, both are called, then one leaves the records. With
// --endpoint-series-ttl 1s, the gone pod's series stay on /metrics for the scrapes
// right after it left and are then dropped, while the live pod's stay and count on.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { startConnectEcho, type Upstream } from '@rpcscope/demo';
import { startDnsServer, type DnsServer } from '../fleet/dns-server.ts';
import { parseExposition, type Sample } from '../support/metrics-text.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';

const NAME = 'orders.test';
let pods: Upstream[] = [];
let dns: DnsServer;
let sc: SidecarProcess;

before(async () => {
  // Two pods on one port, as a headless Service's pods are.
  const first = await startConnectEcho({ host: '127.0.0.2' });
  pods = [first, await startConnectEcho({ host: '127.0.0.3', port: first.port })];
  dns = await startDnsServer({ [NAME]: ['127.0.0.2', '127.0.0.3'] });
  sc = await startSidecarProcess([
    '--mode', 'outbound',
    '--upstream', `http://${NAME}:${first.port}`,
    '--dns-server', dns.address,
    '--resolve-interval', '200ms',
    '--endpoint-series-ttl', '1s',
  ]);
});

after(async () => {
  await sc?.stop();
  await dns?.stop();
  for (const p of pods) await p.close();
});

async function scrape(): Promise<Sample[]> {
  return parseExposition(await (await fetch(`${sc.adminUrl}/metrics`)).text());
}

const seriesOf = (samples: Sample[], endpoint: string): Sample[] => samples.filter((s) => s.name.startsWith('rpcscope_upstream_') && s.labels.upstream === endpoint);
const callsTo = (samples: Sample[], endpoint: string): number => seriesOf(samples, endpoint).filter((s) => s.name === 'rpcscope_upstream_calls_total').reduce((n, s) => n + s.value, 0);

async function until<T>(get: () => Promise<T>, ok: (v: T) => boolean, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function calls(n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    // A new connection each time: its calls may go to either pod.
    const res = await fetch(`${sc.url}/v1/echo/c${i}`, { headers: { connection: 'close' } });
    assert.equal(res.status, 200);
    await res.text();
  }
}

test('the series of an endpoint that left are dropped after --endpoint-series-ttl; a live one keeps its series', { timeout: 90_000 }, async () => {
  const gone = `127.0.0.2:${pods[0]!.port}`;
  const live = `127.0.0.3:${pods[0]!.port}`;
  await until(scrape, (m) => m.some((s) => s.name === 'rpcscope_upstream_endpoints' && s.value === 2), 'two endpoints resolved');
  await calls(20);
  const before = await scrape();
  assert.ok(callsTo(before, gone) > 0 && callsTo(before, live) > 0, 'both pods were called');

  await dns.setRecords({ [NAME]: ['127.0.0.3'] });
  await until(scrape, (m) => m.some((s) => s.name === 'rpcscope_upstream_endpoints' && s.value === 1), 'the pod that left no longer resolved');
  // Right after it left (and while its connections close), its last counts are still exported.
  assert.equal(callsTo(await scrape(), gone), callsTo(before, gone), 'the gone pod\'s calls, still on the scrape after it left');

  const after = await until(scrape, (m) => seriesOf(m, gone).length === 0, 'the gone pod\'s series dropped');
  assert.ok(seriesOf(after, live).length > 0, 'the live pod keeps its series');
  assert.equal(callsTo(after, live), callsTo(before, live));
  await calls(5);
  const end = await scrape();
  assert.equal(callsTo(end, live), callsTo(before, live) + 5, 'and counts on');
  assert.deepEqual(seriesOf(end, gone), [], 'the gone pod does not come back');
  assert.equal(sc.proc.exitCode, null);
});
