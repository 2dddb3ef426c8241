// The dashboards, the panel plugin's queries and the recording rules, over
// either form of the histograms: one real sidecar started with
// `--histograms native` carries known traffic while two real Prometheus
// servers scrape it, one with --enable-feature=native-histograms (protobuf:
// the four native-capable families as native histograms only) and one without
// (text: classic buckets only). Every expression that reads one of those
// families must answer on both, with the same series, and the quantiles must
// agree within the classic bucket that holds the true value (widened by a
// native bucket); the deadline-miss figures, exact counts either way, must be
// equal. A misspelt half of an expression leaves one of the two empty. And
// `both`, on this Prometheus, comes down to `native`.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildDashboards } from '../../dashboards/generate.ts';
import { startPrometheus, type PromSample, type RunningPrometheus } from '../support/prometheus.ts';
import { RULES_FILE } from '../support/recorded-stack.ts';
import { startSidecarProcess, type SidecarProcess } from '../support/sidecar-process.ts';
import { GRPC_BODY, WorkloadClient, startWorkloadUpstream, workloadMethod, type WorkloadUpstream } from '../support/workload-upstream.ts';
import { REPO_ROOT, loadContract } from './metrics-contract.ts';
import { diagnose, type DiagnoseRun } from '../cli/scripted-fleet.ts';
import { dashboardExpressions, metricNames, substitute, type LabelledExpr } from './promql.ts';

const NATIVE = loadContract().nativeHistograms;
/** Native schema 3: neighbouring bucket boundaries are 2^(1/8) apart. */
const NATIVE_STEP = 2 ** (1 / 8);
const TARGET_LABELS = { cluster: 'test', namespace: 'shop', service: 'orders', pod: 'orders-0' };
/** Method 7 carries no deadline, 8 one that its calls meet or miss, 9 streams. */
const UNARY = 7;
const DEADLINE = 8;
const STREAM = 9;
const METHODS = [UNARY, DEADLINE, STREAM].map(workloadMethod);
/**
 * The variables as Grafana sends a selection of every value the data holds.
 * The rate window spans the whole run (the quantiles are then of every call),
 * and the before/after offset stays inside it.
 */
const VALUES: Record<string, string> = {
  ...Object.fromEntries(Object.entries(TARGET_LABELS).map(([k, v]) => [k, `(${v})`])),
  method: `(${METHODS.map((m) => m.replaceAll('.', '\\\\.')).join('|')})`,
  operation: `(${METHODS.map((m) => m.replaceAll('.', '\\\\.')).join('|')})`,
  direction: 'inbound',
  compare: '1s',
  __rate_interval: '2m',
};
const MISS_RATIO = 'namespace_service_protocol:rpcscope_deadline_used_ratio:miss_ratio5m';

/** Every dashboard expression, and every query of the panel's own demo dashboard, that reads a native-capable family. */
function histogramExprs(): LabelledExpr[] {
  const panelDashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'grafana-plugin', 'provisioning', 'dashboards', 'dashboard.json'), 'utf8')) as Parameters<typeof dashboardExpressions>[0];
  return [...Object.values(buildDashboards()), panelDashboard]
    .flatMap((d) => dashboardExpressions(d))
    .filter((e) => metricNames(e.expr).some((n) => NATIVE.has(n)))
    // The demo dashboard's "before" looks a week back; here the run is a few seconds old.
    .map((e) => ({ ...e, expr: substitute(e.expr, VALUES).replaceAll('offset 7d', 'offset 1s') }));
}

function family(expr: string): string {
  const names = metricNames(expr).filter((n) => NATIVE.has(n));
  assert.equal(names.length, 1, `${expr} reads one native-capable family`);
  return names[0] ?? '';
}

const key = (s: PromSample): string => JSON.stringify(Object.entries(s.metric).sort());

describe('dashboards, panel queries and rules over classic and native histograms of the same calls', () => {
  let upstream: WorkloadUpstream;
  let sc: SidecarProcess;
  let native: RunningPrometheus;
  let classic: RunningPrometheus;
  let client: WorkloadClient;
  let made = 0;

  // Fast and slow unary calls; a deadline of 1 s met, one of 150 ms missed by
  // a 200 ms answer (one call in four); a client stream of two messages.
  const grpc = (method: number, delayMs: number, extra: Record<string, string> = {}, body?: Buffer): Promise<number> =>
    client.call(`/${workloadMethod(method)}`, { 'content-type': 'application/grpc', te: 'trailers', 'x-want-delay-ms': String(delayMs), ...extra }, body);
  const round = (): Promise<number[]> =>
    Promise.all([
      grpc(UNARY, 30),
      grpc(UNARY, 30),
      grpc(UNARY, 120),
      ...[1, 2, 3].map(() => grpc(DEADLINE, 20, { 'grpc-timeout': '1S' })),
      grpc(DEADLINE, 200, { 'grpc-timeout': '150m' }),
      grpc(STREAM, 50, {}, Buffer.concat([GRPC_BODY, GRPC_BODY])),
    ]);

  before(async () => {
    upstream = await startWorkloadUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http2', '--histograms', 'native', '--log-level', 'info']);
    client = new WorkloadClient(sc.url);
    // One round before either server scrapes: every series then starts at
    // the same first sample on both, so their rates are of the same calls.
    made += (await round()).length;
    const target = { address: sc.adminUrl.replace('http://', ''), labels: TARGET_LABELS };
    [native, classic] = await Promise.all([
      startPrometheus({ targets: [target], ruleFiles: [RULES_FILE], features: ['native-histograms'] }),
      startPrometheus({ targets: [target], ruleFiles: [RULES_FILE] }),
    ]);
    const counted = (): string => `sum(rpcscope_calls_total) == ${made}`;
    await Promise.all([native.waitForData(counted()), classic.waitForData(counted())]);
    const until = Date.now() + 6000;
    while (Date.now() < until) made += (await round()).length;
    await Promise.all([native.waitForData(counted(), 15_000), classic.waitForData(counted(), 15_000)]);
    // The rules, evaluated every second, have read the last scrape too.
    await new Promise((r) => setTimeout(r, 3000));
  });

  after(async () => {
    client?.close();
    await Promise.all([native?.stop(), classic?.stop()]);
    await sc?.stop();
    await upstream?.close();
  });

  it('each Prometheus holds one form of each native-capable family: native only with the feature flag, classic only without', async () => {
    for (const f of NATIVE) {
      assert.ok((await native.query(`histogram_count(${f})`)).length > 0, `native: ${f}`);
      assert.deepEqual(await native.query(`${f}_bucket`), [], `native: no ${f}_bucket`);
      assert.ok((await classic.query(`${f}_bucket`)).length > 0, `classic: ${f}_bucket`);
      assert.deepEqual(await classic.query(f), [], `classic: no ${f}`);
    }
  });

  it('every dashboard and panel query over those families answers on both, with the same series, and the quantiles agree within the buckets\' error', async () => {
    const exprs = histogramExprs();
    assert.ok(exprs.length >= 25, `${exprs.length} expressions`);
    assert.ok(exprs.some((e) => e.where.startsWith('rpcscope panel /')), 'the panel plugin\'s demo dashboard is among them');
    const bounds = new Map<string, number[]>();
    const problems: string[] = [];
    for (const e of exprs) {
      const [n, c] = await Promise.all([native.query(e.expr), classic.query(e.expr)]);
      if (n.length === 0 || c.length === 0) {
        problems.push(`${e.where}: ${n.length} native, ${c.length} classic series`);
        continue;
      }
      assert.deepEqual(n.map(key).sort(), c.map(key).sort(), `${e.where}: the same series`);
      const f = family(e.expr);
      if (!bounds.has(f)) {
        const les = (await classic.query(`group by (le) (${f}_bucket)`)).map((s) => Number(s.metric.le));
        bounds.set(f, les.filter(Number.isFinite).sort((a, b) => a - b));
      }
      const les = bounds.get(f) ?? [];
      const classicBy = new Map(c.map((s) => [key(s), Number(s.value[1])]));
      for (const s of n) {
        const nv = Number(s.value[1]);
        const cv = classicBy.get(key(s)) ?? NaN;
        if (!e.expr.includes('histogram_quantile')) {
          // The deadline-miss ratio: counts, exact in either form.
          if (!(Math.abs(nv - cv) < 1e-9)) problems.push(`${e.where} ${key(s)}: native ${nv}, classic ${cv}`);
          continue;
        }
        // The classic bucket (lo, hi] the true quantile is in, widened by a native bucket either side.
        // Classic reads the highest bound for a quantile in the +Inf bucket.
        const lo = [...les].reverse().find((b) => b < cv) ?? 0;
        const hi = cv === les.at(-1) ? Infinity : (les.find((b) => b >= cv) ?? Infinity);
        if (!(nv >= lo / NATIVE_STEP && nv <= hi * NATIVE_STEP)) problems.push(`${e.where} ${key(s)}: native ${nv} outside the classic bucket (${lo}, ${hi}] of ${cv}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('the deadline-miss recording rule reads the same ratio from either form: one call in four with a deadline missed it', async () => {
    const [n, c] = await Promise.all([native.query(MISS_RATIO), classic.query(MISS_RATIO)]);
    assert.equal(n.length, 1, JSON.stringify(n));
    assert.equal(c.length, 1, JSON.stringify(c));
    assert.deepEqual(n[0]?.metric, c[0]?.metric);
    const [nv, cv] = [Number(n[0]?.value[1]), Number(c[0]?.value[1])];
    assert.ok(Math.abs(nv - 0.25) < 0.05, `native ${nv}`);
    assert.ok(Math.abs(nv - cv) < 1e-9, `native ${nv}, classic ${cv}`);
  });

  it('rpcscope diagnose finds the same deadline misses from either form, and reads the latency of both', async () => {
    const [n, c] = await Promise.all([native, classic].map((p) => diagnose(p, ['--namespace', TARGET_LABELS.namespace, '--since', '10m'])));
    const misses = (run: DiagnoseRun) => run.report.findings.find((f) => f.kind === 'deadline_misses')?.figures.rows as Array<{ method: string; carried_deadline: number; missed: number; ratio: number }> | undefined;
    const [nm, cm] = [misses(n!), misses(c!)];
    assert.ok(cm !== undefined && nm !== undefined, `findings: native ${n!.report.findings.map((f) => f.kind)}, classic ${c!.report.findings.map((f) => f.kind)}`);
    assert.deepEqual(nm.map((r) => r.method), [workloadMethod(DEADLINE)]);
    assert.deepEqual(cm.map((r) => r.method), [workloadMethod(DEADLINE)]);
    // Classic counts are exact; native ones come from increase(), extrapolated by the same factor for the whole histogram.
    assert.ok(Math.abs(cm[0]!.ratio - 0.25) < 0.05 && Math.abs(nm[0]!.ratio - cm[0]!.ratio) < 0.02, `ratio native ${nm[0]!.ratio}, classic ${cm[0]!.ratio}`);
    // Each finding names the queries it read: the latency and ratio queries carry both forms.
    const queries = n!.report.findings.flatMap((f) => f.queries).join('\n');
    assert.match(queries, /histogram_fraction\(-Inf, 1, sum by/u);
    assert.deepEqual(n!.report.findings.map((f) => f.kind).sort(), c!.report.findings.map((f) => f.kind).sort());
  });

  it('a misspelt native or classic half of a query comes back empty where only that form is held', async () => {
    const e = histogramExprs().find((x) => x.where === 'rpcscope / RPC overview / p99 latency by method / A') ?? assert.fail('no p99 by method');
    const nativeTypo = e.expr.replace('rpcscope_call_duration_seconds{', 'rpcscope_call_duration_second{');
    const classicTypo = e.expr.replace('rpcscope_call_duration_seconds_bucket{', 'rpcscope_call_duration_second_bucket{');
    assert.notEqual(nativeTypo, e.expr);
    assert.notEqual(classicTypo, e.expr);
    assert.ok((await native.query(e.expr)).length > 0);
    assert.deepEqual(await native.query(nativeTypo), []);
    assert.ok((await classic.query(e.expr)).length > 0);
    assert.deepEqual(await classic.query(classicTypo), []);
  });
});

describe('--histograms both under Prometheus 2.42 with the feature flag', () => {
  let upstream: WorkloadUpstream;
  let sc: SidecarProcess;
  let prom: RunningPrometheus;

  before(async () => {
    upstream = await startWorkloadUpstream();
    sc = await startSidecarProcess(['--upstream', upstream.url, '--upstream-protocol', 'http2', '--histograms', 'both', '--log-level', 'info']);
    const client = new WorkloadClient(sc.url);
    // The series exist at the first scrape, so the calls after it are a rate.
    await client.grpc(UNARY, 0, 10);
    prom = await startPrometheus({ targets: [{ address: sc.adminUrl.replace('http://', ''), labels: TARGET_LABELS }], features: ['native-histograms'] });
    await prom.waitForData('sum(rpcscope_calls_total) == 1');
    for (let i = 0; i < 20; i++) await client.grpc(UNARY, 0, 10);
    client.close();
    await prom.waitForData('sum(rpcscope_calls_total) == 21', 15_000);
  });

  after(async () => {
    await prom?.stop();
    await sc?.stop();
    await upstream?.close();
  });

  it('keeps only the native part, as deploy/README.md says, and the dashboards read it', async () => {
    assert.equal(Number((await prom.query('histogram_count(sum(rpcscope_call_duration_seconds))'))[0]?.value[1]), 21);
    assert.deepEqual(await prom.query('rpcscope_call_duration_seconds_bucket'), [], 'no classic buckets kept beside the native ones');
    const e = histogramExprs().find((x) => x.where === 'rpcscope / RPC overview / p99 latency by method / A') ?? assert.fail('no p99 by method');
    const p99 = await prom.query(e.expr);
    assert.equal(p99.length, 1, JSON.stringify(p99));
    assert.ok(Number(p99[0]?.value[1]) >= 0.01 / NATIVE_STEP, `p99 ${p99[0]?.value[1]} of 10 ms calls`);
  });
});
