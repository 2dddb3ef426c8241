// The RPC overview's latency panels show exemplars: each target that asks for
// them, sent as Grafana sends it to a real Prometheus with exemplar storage
// (`/api/v1/query_exemplars` with the panel's expression), returns exemplars
// whose trace_id names a trace the sidecar exported for the test's own calls.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startOrderService, type Upstream } from '@rpcscope/demo';
import { runTraffic } from '@rpcscope/demo/traffic';
import { buildDashboards } from '../../dashboards/generate.ts';
import { startPrometheus, type RunningPrometheus } from '../support/prometheus.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { REPO_ROOT } from './metrics-contract.ts';
import { substitute } from './promql.ts';

const VALUES: Record<string, string> = {
  cluster: '.*',
  namespace: '.*',
  service: '.*',
  pod: '.*',
  operation: '.*',
  method: '.*',
  direction: '.*',
  __rate_interval: '4s',
};

/** An OTLP/HTTP endpoint that keeps the trace ids of the spans posted to /v1/traces. */
async function startOtlpReceiver(): Promise<{ url: string; traceIds: Set<string>; close(): Promise<void> }> {
  const traceIds = new Set<string>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: { traceId: string }[] }[] }[] };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) for (const s of ss.spans) traceIds.add(s.traceId);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    traceIds,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const latencyTargets = (buildDashboards()['rpc-overview.json']?.panels ?? []).flatMap((p) =>
  'targets' in p ? p.targets.filter((t) => t.exemplar).map((t) => ({ where: `${p.title} / ${t.refId}`, expr: substitute(t.expr, VALUES) })) : [],
);

describe('RPC overview exemplars, from a traced sidecar through a real Prometheus', () => {
  let app: Upstream;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let sidecar: SidecarProcess;
  let prom: RunningPrometheus;
  const start = Date.now() / 1000 - 1;

  before(async () => {
    app = await startOrderService({ podName: 'orders-0' });
    receiver = await startOtlpReceiver();
    sidecar = await startSidecarProcess(['--upstream', app.url, '--proto', join(REPO_ROOT, 'demo', 'proto')], {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      POD_NAME: 'orders-0',
      POD_NAMESPACE: 'demo',
    });
    prom = await startPrometheus({
      targets: [{ address: new URL(sidecar.adminUrl).host, labels: { namespace: 'demo', service: 'orders', pod: 'orders-0' } }],
      features: ['exemplar-storage'],
    });
  });

  after(async () => {
    await prom?.stop();
    await sidecar?.stop();
    await Promise.all([app?.close(), receiver?.close()]);
  });

  it('every latency target that asks for exemplars gets some, each naming a trace the sidecar exported', async () => {
    assert.ok(latencyTargets.length >= 4, `${latencyTargets.length} targets ask for exemplars`);
    // Calls go on until every target has an exemplar: Prometheus scrapes every
    // second, and a bucket's exemplar changes at most once a second.
    const found = new Map<string, string[]>();
    const until = Date.now() + 60_000;
    for (let seed = 1; found.size < latencyTargets.length && Date.now() < until; seed++) {
      await runTraffic({ target: sidecar.url, durationMs: 1500, rps: 20, seed, mix: { grpc: 1, rest: 1, connect: 1 } });
      for (const t of latencyTargets) {
        if (found.has(t.where)) continue;
        const series = await prom.queryExemplars(t.expr, start, Date.now() / 1000 + 1);
        const ids = series.flatMap((s) => s.exemplars.map((e) => e.labels.trace_id ?? ''));
        if (ids.length > 0) found.set(t.where, ids);
      }
    }
    assert.deepEqual(latencyTargets.map((t) => t.where).filter((w) => !found.has(w)), [], 'targets without exemplars');
    // Spans are exported in batches every 100 ms; wait for the ones the exemplars name.
    const all = [...new Set([...found.values()].flat())];
    const exportedBy = Date.now() + 10_000;
    while (!all.every((id) => receiver.traceIds.has(id)) && Date.now() < exportedBy) await new Promise((r) => setTimeout(r, 100));
    for (const id of all) {
      assert.match(id, /^[0-9a-f]{32}$/);
      assert.ok(receiver.traceIds.has(id), `exemplar trace ${id} is no trace the sidecar exported`);
    }
  });
});
