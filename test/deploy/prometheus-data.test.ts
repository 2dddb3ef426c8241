// Every dashboard expression and every recording rule, evaluated by a real
// Prometheus that has scraped sidecars carrying traffic (see traffic-stack.ts
// for which sidecars), must return data: a query that names a series no
// sidecar exports, or joins on a label that is not there, comes back empty.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { buildDashboards } from '../../dashboards/generate.ts';
import { REPO_ROOT } from './metrics-contract.ts';
import { startPrometheus, type RunningPrometheus } from './prometheus.ts';
import { dashboardExpressions, substitute } from './promql.ts';
import { startTrafficStack, type TrafficStack } from './traffic-stack.ts';

const RULES = join(REPO_ROOT, 'deploy', 'prometheus', 'rules', 'rpcscope.rules.yml');

// Grafana's $__rate_interval is four scrape intervals at least; the scrape
// interval here is 1 s. The before/after offset is shrunk to fit the few
// seconds of history the test has.
const DATA_VALUES: Record<string, string> = {
  namespace: '.*',
  service: '.*',
  pod: '.*',
  method: '.*',
  operation: '.*',
  direction: '.*',
  compare: '3s',
  __rate_interval: '4s',
};

let stack: TrafficStack;
let prom: RunningPrometheus;

function value(samples: { value: [number, string] }[]): number {
  assert.equal(samples.length, 1, JSON.stringify(samples));
  return Number(samples[0]?.value[1]);
}

describe('against a real Prometheus scraping sidecars with traffic', () => {
  before(async () => {
    stack = await startTrafficStack();
    prom = await startPrometheus({ targets: stack.targets, ruleFiles: [RULES] });
    // The longest look-back any expression needs: a rate window behind an offset.
    await prom.waitForData(`rate(rpcscope_calls_total[${DATA_VALUES.__rate_interval}] offset ${DATA_VALUES.compare})`, 30_000);
    await prom.waitForData('namespace_service:rpcscope_stream_resets:rate1h');
  });

  after(async () => {
    await prom?.stop();
    await stack?.stop();
  });

  it('scrapes every target', async () => {
    const up = await prom.query('up');
    assert.equal(up.length, stack.targets.length);
    for (const s of up) assert.equal(s.value[1], '1', `${s.metric.instance} is down`);
  });

  for (const [file, d] of Object.entries(buildDashboards())) {
    it(`${file}: every expression returns data`, async () => {
      const empty: string[] = [];
      const exprs = dashboardExpressions(d);
      for (const e of exprs) {
        const result = await prom.query(substitute(e.expr, DATA_VALUES));
        if (result.length === 0) empty.push(e.where);
      }
      assert.ok(exprs.length > 10);
      assert.deepEqual(empty, []);
    });
  }

  it('the panel plugin\'s queries return the labels its contract reads (grafana-plugin/README.md)', async () => {
    let checked = 0;
    for (const d of Object.values(buildDashboards())) {
      for (const p of d.panels) {
        if (p.type !== 'rpcscope-protocolcompare-panel' || !('targets' in p)) continue;
        const mode = p.options.mode;
        for (const t of p.targets) {
          const result = await prom.query(substitute(t.expr, DATA_VALUES));
          const where: string = `${d.title} / ${p.title} / ${t.refId}`;
          assert.ok(result.length > 0, where);
          for (const s of result) {
            const labels = Object.keys(s.metric).sort();
            if (mode === 'pods' && t.refId === 'skew') assert.equal(result.length, 1, `${where} is one series`);
            else if (mode === 'pods') assert.ok(labels.includes('pod'), `${where} by pod: ${labels}`);
            else assert.ok(labels.includes('operation') && labels.includes('protocol'), `${where} by operation and protocol: ${labels}`);
          }
          checked++;
        }
      }
    }
    assert.equal(checked, 9 + 18 + 5);
  });

  it('every recording rule returns data', async () => {
    const doc = parse(readFileSync(RULES, 'utf8')) as { groups: { rules: { record?: string }[] }[] };
    const records = doc.groups.flatMap((g) => g.rules.flatMap((r) => (r.record ? [r.record] : [])));
    assert.ok(records.length >= 8);
    const empty: string[] = [];
    for (const r of records) if ((await prom.query(r)).length === 0) empty.push(r);
    assert.deepEqual(empty, []);
  });

  it('the skew a dashboard shows and the recording rule agree with the traffic (4:1:1 over three pods is 2)', async () => {
    const podSkewPanel = buildDashboards()['http2-load-balance.json']?.panels.find((p) => p.title === 'Skew now');
    assert.ok(podSkewPanel && 'targets' in podSkewPanel);
    const expr = substitute(podSkewPanel.targets[0]?.expr ?? '', { ...DATA_VALUES, service: 'orders' });
    assert.ok(Math.abs(value(await prom.query(expr)) - 2) < 0.25);
    assert.ok(Math.abs(value(await prom.query('namespace_service:rpcscope_pod_skew:ratio1m{service="orders"}')) - 2) < 0.25);
    assert.ok(Math.abs(value(await prom.query('namespace_service:rpcscope_pod_skew:ratio1m{service="client"}')) - 1) < 0.01);
  });
});
