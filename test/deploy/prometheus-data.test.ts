// Every dashboard expression and every recording rule, evaluated by a real
// Prometheus that has scraped real sidecars carrying traffic
// (test/support/recorded-stack.ts), must return data: a query that names a
// series no sidecar exports, joins on a label that is not there, or matches a
// misspelt label, comes back empty. The dashboards' variables are given real
// values from the data, never `.*`: `namspace=~".*"` matches every series (the
// label is absent, and "" matches), `namspace=~"demo"` none.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { buildDashboards } from '../../dashboards/generate.ts';
import type { RunningPrometheus } from '../support/prometheus.ts';
import { RULES_FILE as RULES, startRecordedStack, type RecordedStack } from '../support/recorded-stack.ts';
import { loadContract } from './metrics-contract.ts';
import { dashboardExpressions, substitute } from './promql.ts';

/** The `cluster` target label the stack's targets carry, so that the dashboards' cluster matcher selects something. */
const CLUSTER = 'test-cluster';
/** The dashboards' label variables: each matched as `label=~"$label"`. */
const LABEL_VARIABLES = ['cluster', 'namespace', 'service', 'pod', 'method', 'operation', 'direction'] as const;
// Grafana's $__rate_interval is four scrape intervals at least; the scrape
// interval here is 1 s. The before/after offset is shrunk to fit the few
// seconds of history the test has.
const TIME_VALUES = { compare: '3s', __rate_interval: '4s' };
/** Filled in once the data is there: each label variable as Grafana sends a multi-value selection of every value the data holds. */
let DATA_VALUES: Record<string, string> = { ...TIME_VALUES };

/**
 * A multi-value Grafana variable in a Prometheus regex matcher: the values,
 * regex-escaped, as one alternation (what "All" becomes without a custom
 * all-value). Escaped once more for the PromQL string the matcher is written in.
 */
function anyOf(values: readonly string[]): string {
  return `(${values.map((v) => v.replace(/[$^*+?.()|\\{}[\]]/g, '\\\\$&')).join('|')})`;
}

let stack: RecordedStack;
let prom: RunningPrometheus;

function value(samples: { value: [number, string] }[]): number {
  assert.equal(samples.length, 1, JSON.stringify(samples));
  return Number(samples[0]?.value[1]);
}

describe('against a real Prometheus scraping sidecars with traffic', () => {
  before(async () => {
    // With the gateway pod, whose translated and shadow calls the migration dashboard reads.
    stack = await startRecordedStack({ migration: true, cluster: CLUSTER });
    prom = stack.prometheus;
    // The longest look-back any expression needs: a rate window behind an offset.
    await prom.waitForData(`rate(rpcscope_calls_total[${DATA_VALUES.__rate_interval}] offset ${DATA_VALUES.compare})`, 30_000);
    // The long windows are recorded by a group that runs every minute (rpcscope.recording.long), from
    // the 5-minute recordings read up to 30 s back: its first value needs a 5-minute rate 30 s old,
    // then the group's next evaluation, up to a minute later. The 30-minute
    // ratio is the last rule of rpcscope.recording.methods, every minute too, after the per-method
    // rates it sums, so its first value comes with that group's first rates.
    await prom.waitForData('namespace_service:rpcscope_stream_resets_total:rate1h', 180_000);
    await prom.waitForData('namespace_service_method:rpcscope_calls_without_deadline_total:ratio30m', 150_000);
    for (const family of ['rpcscope_translated_calls_total', 'rpcscope_translation_seconds_bucket', 'rpcscope_shadow_calls_total']) {
      await prom.waitForData(`rate(${family}[${DATA_VALUES.__rate_interval}])`, 60_000);
    }
    // The values a user could pick, from the series the variables themselves are read from.
    const values: Record<string, string> = {};
    for (const label of LABEL_VARIABLES) {
      const found = [...new Set((await prom.query(`group by (${label}) (rpcscope_calls_total)`)).map((s) => s.metric[label] ?? ''))].filter((v) => v !== '').sort();
      assert.ok(found.length > 0, `the data has no ${label} value`);
      values[label] = anyOf(found);
    }
    // The direction variable shows one direction at a time; inbound is its default.
    values.direction = 'inbound';
    DATA_VALUES = { ...values, ...TIME_VALUES };
  });

  after(async () => {
    await stack?.stop();
  });

  it('the variables\' values catch a misspelt label matcher, which .* would not', async () => {
    assert.equal(DATA_VALUES.cluster, `(${CLUSTER})`);
    assert.equal(DATA_VALUES.namespace, '(demo)');
    assert.equal(DATA_VALUES.service, '(orders|orders-gateway)');
    for (const label of LABEL_VARIABLES) {
      const matcher = (name: string, value: string): string => `count(rpcscope_calls_total{${name}=~"${value}"})`;
      const misspelt = `${label.slice(0, -1)}x`;
      assert.ok((await prom.query(substitute(matcher(label, `$${label}`), DATA_VALUES))).length > 0, `${label}=~"$${label}" selects data`);
      assert.deepEqual(await prom.query(substitute(matcher(misspelt, `$${label}`), DATA_VALUES)), [], `${misspelt}=~"$${label}" selects nothing`);
      assert.ok((await prom.query(matcher(misspelt, '.*'))).length > 0, `${misspelt}=~".*" would have selected data`);
    }
  });

  it('scrapes every target', async () => {
    const up = await prom.query('up');
    assert.equal(up.length, stack.targets.length);
    for (const s of up) assert.equal(s.value[1], '1', `${s.metric.instance} is down`);
  });

  for (const [file, d] of Object.entries(buildDashboards())) {
    it(`${file}: every expression returns data`, async () => {
      const exprs = dashboardExpressions(d);
      const results = await Promise.all(exprs.map((e) => prom.query(substitute(e.expr, DATA_VALUES))));
      const empty = exprs.filter((_, i) => results[i]?.length === 0).map((e) => e.where);
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
    const results = await Promise.all(records.map((r) => prom.query(r)));
    assert.deepEqual(records.filter((_, i) => results[i]?.length === 0), []);
  });

  it('the skew a dashboard shows and the recording rule agree with the traffic (4:1:1 over three pods is 2)', async () => {
    const podSkewPanel = buildDashboards()['http2-load-balance.json']?.panels.find((p) => p.title === 'Skew now');
    assert.ok(podSkewPanel && 'targets' in podSkewPanel);
    const expr = substitute(podSkewPanel.targets[0]?.expr ?? '', { ...DATA_VALUES, service: 'orders' });
    const panelSkew = value(await prom.query(expr));
    assert.ok(Math.abs(panelSkew - 2) < 0.25, `panel skew ${panelSkew}`);
    const ruleSkew = value(await prom.query('namespace_service:rpcscope_calls_total:pod_skew2m{service="orders"}'));
    assert.ok(Math.abs(ruleSkew - 2) < 0.25, `rule skew ${ruleSkew}`);
    const shares = await prom.query('namespace_service_pod:rpcscope_calls_total:share2m{service="orders"}');
    assert.equal(shares.length, stack.pods.length);
    const sticky = Number(shares.find((s) => s.metric.pod === stack.pods[0])?.value[1]);
    assert.ok(Math.abs(sticky - 2 / 3) < 0.08, `share of ${stack.pods[0]}: ${sticky}`);
  });

  it('the sidecar exports every series docs/metrics.md promises, with every label it lists', async () => {
    const target = stack.targets[0];
    assert.ok(target);
    // Straight from the admin port: Prometheus would drop the empty-valued labels this checks.
    const exposition = await (await fetch(`http://${target.address}/metrics`)).text();
    const samples = exposition.split('\n').flatMap((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
      return m?.[1] ? [{ name: m[1], labels: [...(m[2] ?? '').matchAll(/(\w+)="/g)].map((l) => l[1] ?? '') }] : [];
    });
    const missing: string[] = [];
    const wrongLabels = new Set<string>();
    // The stack's sidecars run with the defaults, which every opt-in metric is absent from.
    for (const m of loadContract().metrics.values()) {
      const name = m.type === 'histogram' ? `${m.name}_count` : m.name;
      if (m.optIn) {
        assert.ok(!samples.some((s) => s.name === name), `${m.name} is exported only when a flag asks for it`);
        continue;
      }
      const own = samples.filter((s) => s.name === name);
      if (own.length === 0) missing.push(m.name);
      for (const s of own) {
        if (s.labels.sort().join() !== [...m.labels].sort().join()) wrongLabels.add(`${m.name}: ${s.labels.join()}`);
      }
    }
    assert.deepEqual(missing, []);
    assert.deepEqual([...wrongLabels], []);
  });
});
