// The committed Grafana dashboards: generated from dashboards/src, valid
// against @grafana/schema, laid out on the grid, reading only contract
// metrics, and made of PromQL that Prometheus parses.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DASHBOARDS_DIR, buildDashboards, render } from '../../dashboards/generate.ts';
import { NATIVE_HISTOGRAMS } from '../../dashboards/src/promql.ts';
import { typeErrors, type TypedValue } from './json-types.ts';
import { loadContract } from './metrics-contract.ts';
import { dashboardExpressions, metricNames, parseErrors, promtool, substitute } from './promql.ts';
import { parse, stringify } from 'yaml';
import { METRICS_MD, REPO_ROOT } from './metrics-contract.ts';

interface PanelJson {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { type?: string; uid?: string };
  targets?: { refId: string; expr: string; datasource?: { uid?: string }; exemplar?: boolean }[];
  options?: Record<string, unknown>;
  fieldConfig?: { defaults?: { custom?: unknown } };
}
interface DashboardJson {
  uid: string;
  title: string;
  panels: PanelJson[];
  templating: { list: { name: string; type: string; query?: unknown; includeAll?: boolean; multi?: boolean; allValue?: string; current?: { value?: unknown } }[] };
}

const FILES = Object.keys(buildDashboards());
const committed = new Map<string, DashboardJson>(
  FILES.map((f) => [f, JSON.parse(readFileSync(join(DASHBOARDS_DIR, f), 'utf8')) as DashboardJson]),
);

/** Values that stand in for the template variables when the expressions are checked outside Grafana. */
export const PARSE_VALUES: Record<string, string> = {
  cluster: '.*',
  namespace: '.*',
  service: '.*',
  pod: '.*',
  method: '.*',
  operation: '.*',
  direction: '.*',
  compare: '1d',
  __rate_interval: '1m',
};

const PLUGIN = 'rpcscope-protocolcompare-panel';
const COMPARE_REFIDS = ['p50', 'p95', 'p99', 'rate', 'errors', 'deadline_miss', 'resets', 'req_bytes', 'resp_bytes'];
const PODS_REFIDS = ['share', 'rate', 'connections', 'calls_per_connection', 'skew'];

describe('dashboards', () => {
  it('are the generator\'s output (run `node --import tsx dashboards/generate.ts` after editing dashboards/src)', () => {
    for (const [file, d] of Object.entries(buildDashboards())) {
      assert.equal(readFileSync(join(DASHBOARDS_DIR, file), 'utf8'), render(d), `dashboards/${file} is stale`);
    }
  });

  it('validate against the dashboard and panel schemas of @grafana/schema', () => {
    const values: TypedValue[] = [];
    for (const [file, d] of committed) {
      values.push({ label: file, type: 'Dashboard', value: d });
      for (const p of d.panels) {
        const at = `${file} / ${p.title}`;
        if (p.type === 'timeseries') {
          values.push({ label: `${at} options`, type: 'TimeseriesOptions', value: p.options });
          values.push({ label: `${at} fieldConfig.custom`, type: 'TimeseriesFieldConfig', value: p.fieldConfig?.defaults?.custom });
        } else if (p.type === 'stat') {
          values.push({ label: `${at} options`, type: 'StatOptions', value: p.options });
        }
      }
    }
    const errors = typeErrors(
      [
        "import type { Dashboard } from '@grafana/schema';",
        "import type { Options as TimeseriesOptions, FieldConfig as TimeseriesFieldConfig } from '@grafana/schema/dist/esm/raw/composable/timeseries/panelcfg/x/TimeSeriesPanelCfg_types.gen';",
        "import type { Options as StatOptions } from '@grafana/schema/dist/esm/raw/composable/stat/panelcfg/x/StatPanelCfg_types.gen';",
      ].join('\n'),
      values,
    );
    assert.deepEqual(errors, []);
  });

  it('the schema check rejects a misspelt field and a wrong enum value', () => {
    const d = [...committed.values()][0] ?? assert.fail('no dashboards');
    const errors = typeErrors("import type { Dashboard } from '@grafana/schema';", [
      { label: 'misspelt', type: 'Dashboard', value: { ...d, refersh: '30s' } },
      { label: 'enum', type: 'Dashboard', value: { ...d, graphTooltip: 7 } },
    ]);
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.match(errors[0] ?? '', /^misspelt: .*'"refersh"' does not exist/);
    assert.match(errors[1] ?? '', /^enum: .*graphTooltip/);
  });

  it('have unique uids, unique panel ids, and panels inside a non-overlapping 24-column grid', () => {
    const uids = [...committed.values()].map((d) => d.uid);
    assert.equal(new Set(uids).size, uids.length);
    for (const [file, d] of committed) {
      const ids = d.panels.map((p) => p.id);
      assert.equal(new Set(ids).size, ids.length, `${file}: duplicate panel id`);
      const cells = new Set<string>();
      for (const p of d.panels) {
        const { x, y, w, h } = p.gridPos;
        assert.ok(x >= 0 && w > 0 && x + w <= 24 && h > 0, `${file} / ${p.title}: gridPos ${JSON.stringify(p.gridPos)}`);
        for (let cx = x; cx < x + w; cx++) {
          for (let cy = y; cy < y + h; cy++) {
            const cell = `${cx},${cy}`;
            assert.ok(!cells.has(cell), `${file} / ${p.title} overlaps another panel at ${cell}`);
            cells.add(cell);
          }
        }
      }
    }
  });

  it('read from the chosen data source and define every variable they use', () => {
    for (const [file, d] of committed) {
      const names = d.templating.list.map((v) => v.name);
      for (const required of ['datasource', 'cluster', 'namespace', 'service', 'pod', 'method']) {
        assert.ok(names.includes(required), `${file}: no ${required} variable`);
      }
      for (const p of d.panels.filter((p) => p.type !== 'row')) {
        assert.equal(p.datasource?.uid, '${datasource}', `${file} / ${p.title}: panel data source`);
        for (const t of p.targets ?? []) assert.equal(t.datasource?.uid, '${datasource}', `${file} / ${p.title} / ${t.refId}`);
      }
      const defined = Object.fromEntries([...names, '__rate_interval'].map((n) => [n, 'x']));
      for (const e of dashboardExpressions(d)) substitute(e.expr, defined);
    }
  });

  it('give the panel plugin the refIds of its query contract in each mode', () => {
    const modes = new Set<string>();
    for (const d of committed.values()) {
      for (const p of d.panels.filter((p) => p.type === PLUGIN)) {
        const mode = p.options?.mode as string;
        modes.add(mode);
        const refIds = (p.targets ?? []).map((t) => t.refId).sort();
        const expected =
          mode === 'protocols' ? COMPARE_REFIDS
          : mode === 'beforeAfter' ? [...COMPARE_REFIDS, ...COMPARE_REFIDS.map((r) => `${r}_before`)]
          : mode === 'pods' ? PODS_REFIDS
          : assert.fail(`${d.title} / ${p.title}: unknown mode ${mode}`);
        assert.deepEqual(refIds, [...expected].sort(), `${d.title} / ${p.title}`);
        assert.equal(p.options?.baseline, 'rest');
        for (const t of p.targets ?? []) {
          if (t.refId.endsWith('_before')) assert.match(t.expr, /offset \$compare/, `${p.title} / ${t.refId} looks back`);
          else assert.doesNotMatch(t.expr, /offset/, `${p.title} / ${t.refId} looks at now`);
        }
      }
    }
    assert.deepEqual([...modes].sort(), ['beforeAfter', 'pods', 'protocols']);
  });

  it('name only metrics defined in docs/metrics.md', () => {
    const { seriesNames } = loadContract();
    const unknown: string[] = [];
    let seen = 0;
    for (const d of committed.values()) {
      for (const e of dashboardExpressions(d)) {
        for (const name of metricNames(e.expr)) {
          seen++;
          if (!seriesNames.has(name)) unknown.push(`${e.where}: ${name}`);
        }
      }
    }
    assert.ok(seen > 50, `only ${seen} metric references found`);
    assert.deepEqual(unknown, []);
  });

  it('read each family a sidecar may serve as a native histogram in both its classic and its native form', () => {
    const { nativeHistograms } = loadContract();
    assert.deepEqual([...NATIVE_HISTOGRAMS].sort(), [...nativeHistograms].sort(), 'dashboards/src/promql.ts and docs/metrics.md name the same native families');
    let both = 0;
    for (const d of committed.values()) {
      for (const e of dashboardExpressions(d)) {
        const names = metricNames(e.expr);
        for (const family of nativeHistograms) {
          const classic = names.includes(`${family}_bucket`);
          const native = names.includes(family);
          assert.equal(classic, native, `${e.where}: ${family}${classic ? '_bucket without its native form' : ' without its classic _bucket form'}`);
          if (classic) both++;
        }
      }
    }
    assert.ok(both >= 10, `${both} expressions read both forms`);
  });

  it('have PromQL that Prometheus parses', () => {
    const exprs = [...committed.values()].flatMap((d) => dashboardExpressions(d)).map((e) => ({ ...e, expr: substitute(e.expr, PARSE_VALUES) }));
    assert.deepEqual(parseErrors(exprs), []);
  });

  it('have a `cluster` variable, All by default, that every selector of every query and variable filters on', () => {
    for (const [file, d] of committed) {
      const cluster = d.templating.list.find((v) => v.name === 'cluster');
      assert.ok(cluster, `${file}: no cluster variable`);
      assert.equal((cluster.query as { query?: string }).query, 'label_values(rpcscope_calls_total, cluster)');
      assert.equal(cluster.includeAll, true);
      assert.equal(cluster.allValue, '.*', `${file}: All must match series without the label`);
      assert.deepEqual(cluster.current?.value, ['$__all']);
      const selectors = dashboardExpressions(d)
        .filter((e) => !e.where.endsWith('variable cluster'))
        .flatMap((e) => [...e.expr.matchAll(/\b(rpcscope_\w+|target_info)\b(\{[^}]*\})?/g)].map((m) => ({ where: e.where, selector: m[0] })));
      assert.ok(selectors.length > 20, `${file}: ${selectors.length} selectors`);
      const unfiltered = selectors.filter((s) => !s.selector.includes('cluster=~"$cluster"')).map((s) => `${s.where}: ${s.selector}`);
      assert.deepEqual(unfiltered, [], file);
    }
  });

  it('rpc-overview: an `operation` variable filters the calls, and the method variable follows it', () => {
    const d = committed.get('rpc-overview.json') ?? assert.fail('no rpc-overview');
    const operation = d.templating.list.find((v) => v.name === 'operation');
    assert.ok(operation);
    assert.match((operation.query as { query?: string }).query ?? '', /^label_values\(rpcscope_calls_total\{.*\}, operation\)$/);
    assert.equal(operation.multi, true);
    assert.equal(operation.includeAll, true);
    const method = d.templating.list.find((v) => v.name === 'method');
    assert.match((method?.query as { query?: string }).query ?? '', /operation=~"\$operation"/);
    // Its All is the list of the operation's methods, so series without `operation` follow the pick.
    assert.equal(method?.allValue, undefined);
    const names = d.templating.list.map((v) => v.name);
    assert.ok(names.indexOf('operation') < names.indexOf('method'), 'operation is resolved before method');
    const { metrics } = loadContract();
    let filtered = 0;
    for (const e of dashboardExpressions(d).filter((e) => !e.where.includes('/ variable '))) {
      for (const m of e.expr.matchAll(/\b(rpcscope_\w+?)(_bucket|_sum|_count)?\{([^}]*)\}/g)) {
        const family = metrics.get(m[1] ?? '') ?? metrics.get(`${m[1]}${m[2] ?? ''}`);
        const selector = m[3] ?? '';
        if (family?.labels.includes('operation')) {
          assert.ok(selector.includes('operation=~"$operation"'), `${e.where}: ${m[0]}`);
          filtered++;
        } else if (family?.labels.includes('method')) {
          assert.ok(selector.includes('method=~"$method"'), `${e.where}: ${m[0]}`);
        }
      }
    }
    assert.ok(filtered > 10, `${filtered} selectors filtered by operation`);
  });

  it('rpc-overview: every latency target of a time series panel asks for exemplars, and only those', () => {
    const d = committed.get('rpc-overview.json') ?? assert.fail('no rpc-overview');
    let latency = 0;
    for (const p of d.panels) {
      for (const t of p.targets ?? []) {
        // The one histogram whose buckets carry exemplars (docs/metrics.md, "OpenMetrics and exemplars").
        const isLatency = /histogram_quantile\([^,]+,[^]*rpcscope_call_duration_seconds_bucket\{/.test(t.expr);
        if (isLatency && p.type === 'timeseries') {
          assert.equal(t.exemplar, true, `${p.title} / ${t.refId}`);
          latency++;
        } else {
          assert.notEqual(t.exemplar, true, `${p.title} / ${t.refId} reads no exemplars`);
        }
      }
    }
    assert.ok(latency >= 4, `${latency} latency targets`);
  });

  it('the provisioned data sources link exemplars only to data sources provisioned beside them, and the documented link reads trace_id, the label the sidecar writes', () => {
    const file = join(REPO_ROOT, 'deploy/grafana/provisioning/datasources/rpcscope.yaml');
    type Destination = { name?: string; datasourceUid?: string };
    const ds = parse(readFileSync(file, 'utf8')) as { datasources: { uid?: string; jsonData?: { exemplarTraceIdDestinations?: Destination[] } }[] };
    const uids = new Set(ds.datasources.map((d) => d.uid));
    for (const d of ds.datasources) {
      for (const dest of d.jsonData?.exemplarTraceIdDestinations ?? []) assert.ok(uids.has(dest.datasourceUid), `exemplar destination ${dest.datasourceUid} is a provisioned data source`);
    }
    // The exemplar's label as the metric contract shows it on a bucket line, and as the
    // deploy README's provisioning lines name it.
    assert.match(readFileSync(METRICS_MD, 'utf8'), /# \{trace_id="…",span_id="…"\}/);
    assert.match(readFileSync(join(REPO_ROOT, 'deploy/README.md'), 'utf8'), /exemplarTraceIdDestinations:\n\s+- name: trace_id /);
  });
});

describe('PromQL helpers', () => {
  it('pick out metric names, not functions, labels, keywords or durations', () => {
    const expr =
      'sum by (pod, le) (rate(rpcscope_calls_total{code!="OK", method=~"a/b"}[5m] offset 1d)) / on (pod) group_left () ' +
      'namespace_service:rpcscope_calls_total:pod_skew2m or histogram_quantile(0.9, x_bucket) * 0';
    assert.deepEqual(metricNames(expr).sort(), ['namespace_service:rpcscope_calls_total:pod_skew2m', 'rpcscope_calls_total', 'x_bucket']);
  });

  it('report an expression promtool cannot parse', () => {
    const errors = parseErrors([
      { where: 'good', expr: 'sum(rate(rpcscope_calls_total[1m]))' },
      { where: 'bad', expr: 'sum(rate(rpcscope_calls_total[1m])' },
    ]);
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /^bad: /);
  });

  it('refuse a variable they were not given a value for', () => {
    assert.throws(() => substitute('rate(x{pod=~"$pods"}[1m])', { pod: '.*' }), /unknown variable \$pods/);
    assert.equal(substitute('x{a="${namespace}"}[$__rate_interval]', { namespace: 'n', __rate_interval: '1m' }), 'x{a="n"}[1m]');
  });
});

/** A panel's expressions with the template variables filled in, by dashboard file and panel title. */
function panelExprs(file: string, title: string): Record<string, string> {
  const panel = committed.get(file)?.panels.find((p) => p.title === title);
  assert.ok(panel?.targets, `${file} has no panel "${title}"`);
  return Object.fromEntries(panel.targets.map((t) => [t.refId, substitute(t.expr, PARSE_VALUES)]));
}

/**
 * Evaluates expressions over given series with `promtool test rules` (no
 * rules of its own), which fails unless each returns exactly the samples given.
 */
function evaluate(series: Record<string, string>, checks: { expr: string; samples: Record<string, number> }[]): { ok: boolean; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-dash-'));
  try {
    writeFileSync(join(dir, 'none.rules.yml'), 'groups: []\n');
    const test = {
      rule_files: ['none.rules.yml'],
      evaluation_interval: '15s',
      tests: [
        {
          interval: '15s',
          input_series: Object.entries(series).map(([s, values]) => ({ series: s, values })),
          promql_expr_test: checks.map((c) => ({
            expr: c.expr,
            eval_time: '10m',
            exp_samples: Object.entries(c.samples).map(([labels, value]) => ({ labels, value })),
          })),
        },
      ],
    };
    writeFileSync(join(dir, 'test.yml'), stringify(test));
    return promtool(['test', 'rules', 'test.yml'], dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const CALL = 'direction="inbound", protocol="grpc", encoding="proto", method="shop.v1.Orders/Get", operation="shop.v1.Orders/Get", code="OK", http_status="200"';

describe('dashboard figures on known data', () => {
  it('http2-load-balance: with full pinning, idle pods show at 0 and each service is its own 100 %', () => {
    // orders: one client pinned to orders-a at 3 calls/s, orders-b and -c idle
    // (only target_info); payments: payments-a at 1 call/s, payments-b idle.
    const series: Record<string, string> = {
      [`rpcscope_calls_total{namespace="shop", service="orders", pod="orders-a", ${CALL}}`]: '0+45x60',
      [`rpcscope_calls_total{namespace="shop", service="payments", pod="payments-a", ${CALL}}`]: '0+15x60',
    };
    for (const [svc, pod] of [['orders', 'orders-a'], ['orders', 'orders-b'], ['orders', 'orders-c'], ['payments', 'payments-a'], ['payments', 'payments-b']]) {
      series[`target_info{namespace="shop", service="${svc}", pod="${pod}", service_name="rpcscope"}`] = '1x60';
    }
    const pods = (a: number, pa: number) => ({
      '{namespace="shop", service="orders", pod="orders-a"}': a,
      '{namespace="shop", service="orders", pod="orders-b"}': 0,
      '{namespace="shop", service="orders", pod="orders-c"}': 0,
      '{namespace="shop", service="payments", pod="payments-a"}': pa,
      '{namespace="shop", service="payments", pod="payments-b"}': 0,
    });
    const compared = panelExprs('http2-load-balance.json', 'Pods compared');
    const checks = [
      { expr: compared.share ?? '', samples: pods(1, 1) },
      { expr: compared.rate ?? '', samples: pods(3, 1) },
      { expr: panelExprs('http2-load-balance.json', 'Share of calls per pod').A ?? '', samples: pods(1, 1) },
      { expr: panelExprs('http2-load-balance.json', 'Call rate per pod').A ?? '', samples: pods(3, 1) },
    ];
    const r = evaluate(series, checks);
    assert.ok(r.ok, r.output);
  });

  it('cluster: All matches series without the label; two clusters\' same-named pods stay apart, and one can be picked', () => {
    const single: Record<string, string> = {
      [`rpcscope_calls_total{namespace="shop", service="orders", pod="orders-a", ${CALL}}`]: '0+15x60',
      'target_info{namespace="shop", service="orders", pod="orders-a", service_name="rpcscope"}': '1x60',
    };
    const ratePerPod = panelExprs('http2-load-balance.json', 'Call rate per pod').A ?? '';
    const one = evaluate(single, [{ expr: ratePerPod, samples: { '{namespace="shop", service="orders", pod="orders-a"}': 1 } }]);
    assert.ok(one.ok, one.output);

    const two: Record<string, string> = {};
    for (const [cluster, perScrape] of [['east', '15'], ['west', '45']]) {
      two[`rpcscope_calls_total{cluster="${cluster}", namespace="shop", service="orders", pod="orders-a", ${CALL}}`] = `0+${perScrape}x60`;
      two[`target_info{cluster="${cluster}", namespace="shop", service="orders", pod="orders-a", service_name="rpcscope"}`] = '1x60';
    }
    const pod = (cluster: string): string => `{cluster="${cluster}", namespace="shop", service="orders", pod="orders-a"}`;
    const eastOnly = (expr: string): string => expr.replaceAll('cluster=~".*"', 'cluster=~"east"');
    const share = panelExprs('http2-load-balance.json', 'Share of calls per pod').A ?? '';
    const r = evaluate(two, [
      { expr: ratePerPod, samples: { [pod('east')]: 1, [pod('west')]: 3 } },
      { expr: share, samples: { [pod('east')]: 1, [pod('west')]: 1 } },
      { expr: eastOnly(ratePerPod), samples: { [pod('east')]: 1 } },
      { expr: eastOnly(panelExprs('rpc-overview.json', 'Calls/s').A ?? ''), samples: { '{}': 1 } },
    ]);
    assert.ok(r.ok, r.output);
  });

  it('protocol-migration: shadow match ratio, mismatches and errors per operation, 0 rather than absent', () => {
    const shadow = (op: string, result: string): string => `rpcscope_shadow_calls_total{namespace="shop", service="gateway", pod="gateway-a", operation="${op}", result="${result}"}`;
    const translated = (op: string): string =>
      `rpcscope_translated_calls_total{namespace="shop", service="gateway", pod="gateway-a", protocol="rest", translation="rest_to_grpc", operation="${op}"}`;
    // Per second: Get 3 matches and 1 mismatch, List 2 matches; 2 Get and 1 List translated.
    const series: Record<string, string> = {
      [shadow('shop.v1.Orders/Get', 'match')]: '0+45x60',
      [shadow('shop.v1.Orders/Get', 'mismatch')]: '0+15x60',
      [shadow('shop.v1.Orders/List', 'match')]: '0+30x60',
      [translated('shop.v1.Orders/Get')]: '0+30x60',
      [translated('shop.v1.Orders/List')]: '0+15x60',
    };
    const get = '{operation="shop.v1.Orders/Get"}';
    const list = '{operation="shop.v1.Orders/List"}';
    const [mismatches, errors] = Object.values(panelExprs('protocol-migration.json', 'Shadow mismatches and errors/s'));
    const r = evaluate(series, [
      { expr: panelExprs('protocol-migration.json', 'Shadow match ratio by operation').A ?? '', samples: { [get]: 0.75, [list]: 1 } },
      { expr: mismatches ?? '', samples: { [get]: 1, [list]: 0 } },
      { expr: errors ?? '', samples: { [get]: 0, [list]: 0 } },
      {
        expr: panelExprs('protocol-migration.json', 'Translated calls/s by operation').A ?? '',
        samples: { '{operation="shop.v1.Orders/Get", translation="rest_to_grpc"}': 2, '{operation="shop.v1.Orders/List", translation="rest_to_grpc"}': 1 },
      },
    ]);
    assert.ok(r.ok, r.output);
  });

  it('http2-load-balance: the pods panels repeat per service, so one table and one skew never mix services', () => {
    for (const title of ['Pods compared', 'Share of calls per pod']) {
      const panel = committed.get('http2-load-balance.json')?.panels.find((p) => p.title === title) as (PanelJson & { repeat?: string }) | undefined;
      assert.equal(panel?.repeat, 'service', title);
    }
  });

  it('rpc-overview: the deadline miss ratio divides like by like and never exceeds 1', () => {
    // Per 15 s: 4 calls without a deadline answered DEADLINE_EXCEEDED by the
    // upstream, 1 call with a deadline that ended after it, 5 OK calls without one.
    const labels = 'namespace="shop", service="orders", pod="orders-a", direction="inbound", protocol="grpc", method="shop.v1.Orders/Get"';
    const series: Record<string, string> = {
      [`rpcscope_calls_total{namespace="shop", service="orders", pod="orders-a", ${CALL.replace('code="OK"', 'code="DEADLINE_EXCEEDED"')}}`]: '0+5x60',
      [`rpcscope_calls_total{namespace="shop", service="orders", pod="orders-a", ${CALL}}`]: '0+5x60',
      [`rpcscope_deadline_exceeded_total{${labels}, detected_by="status"}`]: '0+4x60',
      [`rpcscope_deadline_exceeded_total{${labels}, detected_by="late_response"}`]: '0+1x60',
      [`rpcscope_deadline_requested_seconds_count{${labels}}`]: '0+1x60',
      [`rpcscope_deadline_used_ratio_count{${labels}}`]: '0+1x60',
      [`rpcscope_deadline_used_ratio_bucket{${labels}, le="1"}`]: '0x60',
    };
    const [missed, ended] = Object.values(panelExprs('rpc-overview.json', 'Deadline miss ratio by method'));
    const r = evaluate(series, [
      { expr: missed ?? '', samples: { '{method="shop.v1.Orders/Get"}': 1 } },
      { expr: ended ?? '', samples: { '{method="shop.v1.Orders/Get"}': 0.5 } },
    ]);
    assert.ok(r.ok, r.output);
  });
});
