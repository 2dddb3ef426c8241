// The Prometheus rules in deploy/prometheus: valid for promtool, passing their
// own unit tests, reading only contract metrics, and each alert carrying what
// an on-call engineer needs to act on it.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { REPO_ROOT, loadContract } from './metrics-contract.ts';
import { metricNames, promtool, rangeReads } from './promql.ts';

const PROM_DIR = join(REPO_ROOT, 'deploy', 'prometheus');
const RUNBOOK_BASE = 'https://github.com/rpcscope/rpcscope/blob/main/deploy/README.md';
const RULE_FILES = readdirSync(join(PROM_DIR, 'rules')).filter((f) => f.endsWith('.yml')).map((f) => join(PROM_DIR, 'rules', f));
const TEST_FILES = readdirSync(join(PROM_DIR, 'tests')).filter((f) => f.endsWith('.yml')).map((f) => join('tests', f));

interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
const rules: Rule[] = RULE_FILES.flatMap((f) => (parse(readFileSync(f, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules));
const alerts = rules.filter((r) => r.alert);
const groups = RULE_FILES.flatMap((f) => (parse(readFileSync(f, 'utf8')) as { groups: { name: string; interval?: string; rules: Rule[] }[] }).groups);

/** `where: metric[range]` for each range longer than 5 minutes over a sidecar's own series (rpcscope_*), not a recorded one. */
function longRawRanges(r: Rule): string[] {
  return rangeReads(r.expr)
    .filter((read) => read.seconds > 300)
    .flatMap((read) => read.metrics.filter((m) => m.startsWith('rpcscope_')).map((m) => `${r.record ?? r.alert}: ${m}[${read.range}]`));
}
const records = new Set(rules.flatMap((r) => (r.record ? [r.record] : [])));

describe('prometheus rules', () => {
  it('pass promtool check rules', () => {
    const r = promtool(['check', 'rules', ...RULE_FILES]);
    assert.ok(r.ok, r.output);
  });

  it('pass their promtool unit tests', () => {
    assert.ok(TEST_FILES.length > 0);
    const r = promtool(['test', 'rules', ...TEST_FILES], PROM_DIR);
    assert.ok(r.ok, r.output);
  });

  it('unit tests catch a changed threshold', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rpcscope-rules-'));
    try {
      mkdirSync(join(dir, 'rules'));
      mkdirSync(join(dir, 'tests'));
      const original = readFileSync(join(PROM_DIR, 'rules', 'rpcscope.rules.yml'), 'utf8');
      const loosened = original.replace('namespace_service:rpcscope_calls_total:pod_skew2m > 1.5', 'namespace_service:rpcscope_calls_total:pod_skew2m > 2.5');
      assert.notEqual(loosened, original);
      writeFileSync(join(dir, 'rules', 'rpcscope.rules.yml'), loosened);
      for (const t of TEST_FILES) copyFileSync(join(PROM_DIR, t), join(dir, t));
      const r = promtool(['test', 'rules', ...TEST_FILES], dir);
      assert.ok(!r.ok, 'promtool test rules passed against a loosened skew alert');
      assert.match(r.output, /RpcscopePodLoadSkew/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('cover the skew, deadline-miss, reset-spike, missing-deadline and error-ratio alerts, each unit-tested', () => {
    const names = alerts.map((a) => a.alert);
    for (const name of ['RpcscopePodLoadSkew', 'RpcscopeDeadlineMissRatioHigh', 'RpcscopeStreamResetSpike', 'RpcscopeCallsWithoutDeadline', 'RpcscopeErrorRatioHigh', 'RpcscopeTargetDown']) {
      assert.ok(names.includes(name), `no ${name}`);
    }
    const tested = TEST_FILES.map((t) => readFileSync(join(PROM_DIR, t), 'utf8')).join('\n');
    for (const a of alerts) assert.match(tested, new RegExp(`alertname: ${a.alert}\\b`), `${a.alert} has no promtool test`);
  });

  it('read no range longer than 5 minutes over a sidecar series: longer windows come from recorded 5-minute series', () => {
    assert.ok(rules.some((r) => rangeReads(r.expr).some((read) => read.seconds > 300)), 'no rule reads a long window at all');
    assert.deepEqual(rules.flatMap(longRawRanges), []);
  });

  it('select no per-method-and-code call counter: fleet-wide reads go to rpcscope_protocol_calls_total', () => {
    // Prometheus (2.42) sorts every series a selector matches before reading it, so a rule's cost
    // follows the series it selects: rpcscope_calls_total is 320 a pod in the sizing workload, and
    // two reads of it per evaluation held 1,000 pods' rule groups past their interval.
    assert.deepEqual(rules.filter((r) => metricNames(r.expr).includes('rpcscope_calls_total')).map((r) => r.record ?? r.alert), []);
    assert.ok(rules.some((r) => metricNames(r.expr).includes('rpcscope_protocol_calls_total')));
    assert.deepEqual(metricNames('sum by (pod) (rate(rpcscope_calls_total{direction="inbound"}[2m]))'), ['rpcscope_calls_total']);
  });

  it('the long-window check catches a 30-minute rate over raw counters, directly or in a subquery', () => {
    const old = 'sum by (namespace, service, method) (rate(rpcscope_calls_without_deadline_total[30m])) / (sum by (namespace, service, method) (rate(rpcscope_calls_total{protocol=~"grpc|connect"}[30m])) > 0)';
    assert.deepEqual(longRawRanges({ record: 'old', expr: old }), ['old: rpcscope_calls_without_deadline_total[30m]', 'old: rpcscope_calls_total[30m]']);
    assert.deepEqual(longRawRanges({ record: 'sub', expr: 'max_over_time(sum by (service) (rate(rpcscope_calls_total[1m]))[1h:1m])' }), ['sub: rpcscope_calls_total[1h]']);
    assert.deepEqual(longRawRanges({ record: 'ok', expr: 'sum_over_time(a:rpcscope_calls_total:rate5m[30m]) / rate(rpcscope_calls_total{code="OK"}[5m])' }), []);
  });

  it('put the long windows in the groups that run every minute, so the 30 s ones are not held up behind them', () => {
    // rpcscope.recording.long, and the 30-minute missing-deadline ratio as the last rule of
    // rpcscope.recording.methods, beside the two rates it divides: another group could read them
    // between the two records, one side an evaluation newer than the other.
    const longReaders = new Set(['rpcscope.recording.methods', 'rpcscope.recording.long']);
    for (const g of groups) {
      const long = g.rules.some((r) => rangeReads(r.expr).some((read) => read.seconds > 300));
      assert.equal(long, longReaders.has(g.name), `${g.name} ${long ? 'reads' : 'does not read'} windows over 5 minutes`);
      if (long) assert.equal(g.interval, '1m', g.name);
    }
  });

  it("read another group's records over a window only 30 s or more in the past", () => {
    // Each group runs on its own schedule, and each rule's read sees what was committed before it:
    // a window ending now can hold the newest evaluation of one of another group's records and not
    // of the next one, when that group is part-way through its rules. Ending 30 s back, past any
    // evaluation that keeps to its interval, it holds whole evaluations only.
    const recordedBy = new Map(groups.flatMap((g) => g.rules.flatMap((r) => (r.record ? [[r.record, g.name] as const] : []))));
    const early = groups.flatMap((g) =>
      g.rules.flatMap((r) =>
        rangeReads(r.expr).flatMap((read) =>
          read.metrics.filter((m) => recordedBy.has(m) && recordedBy.get(m) !== g.name && read.offsetSeconds < 30).map((m) => `${g.name} ${r.record ?? r.alert}: ${m}[${read.range}]`),
        ),
      ),
    );
    assert.deepEqual(early, []);
    assert.deepEqual(
      rangeReads('sum_over_time(a:b:rate5m[1h] offset 30s) / count_over_time(c:d:rate5m[1h])').map((r) => r.offsetSeconds),
      [30, 0],
    );
  });

  it('record the missing-deadline ratio in the group that records both its sides, after them', () => {
    const methods = groups.find((g) => g.name === 'rpcscope.recording.methods')!;
    const at = (record: string): number => methods.rules.findIndex((r) => r.record === record);
    const ratio = at('namespace_service_method:rpcscope_calls_without_deadline_total:ratio30m');
    assert.ok(ratio >= 0, 'the ratio is in rpcscope.recording.methods');
    for (const side of ['namespace_service_direction_protocol_method:rpcscope_calls_without_deadline_total:rate5m', 'namespace_service_direction_protocol_method:rpcscope_calls_total:rate5m']) {
      assert.ok(at(side) >= 0 && at(side) < ratio, `${side} is recorded before the ratio, in the same group`);
      assert.ok(metricNames(methods.rules[ratio]!.expr ?? '').includes(side), side);
    }
  });

  it('record per-pod call rate and cross-pod skew by namespace and service', () => {
    for (const r of ['namespace_service_pod:rpcscope_calls_total:rate2m', 'namespace_service:rpcscope_calls_total:pod_skew2m']) assert.ok(records.has(r), r);
    const skew = rules.find((r) => r.record === 'namespace_service:rpcscope_calls_total:pod_skew2m');
    assert.match(skew?.expr ?? '', /max by \(namespace, service\)[\s\S]*\/[\s\S]*avg by \(namespace, service\)/);
  });

  it('name recording rules level:metric:operations', () => {
    for (const r of records) assert.match(r, /^[a-z_]+:rpcscope_[a-z_]+:[a-z0-9_]+$/, r);
  });

  it('read only contract metrics, recording rules defined here, Prometheus\'s up and the kube-state-metrics defaults named in deploy/README.md', () => {
    const { seriesNames } = loadContract();
    const readme = readFileSync(join(REPO_ROOT, 'deploy', 'README.md'), 'utf8');
    const outside = new Set(['up', ...['kube_pod_init_container_info', 'kube_pod_container_info'].filter((m) => readme.includes(`\`${m}\``))]);
    const unknown: string[] = [];
    for (const r of rules) {
      for (const name of metricNames(r.expr)) {
        if (!seriesNames.has(name) && !records.has(name) && !outside.has(name)) unknown.push(`${r.record ?? r.alert}: ${name}`);
      }
    }
    assert.deepEqual(unknown, []);
  });

  it('give every alert a severity, a summary, a description and a runbook line that points at a README section', () => {
    const readme = readFileSync(join(REPO_ROOT, 'deploy', 'README.md'), 'utf8');
    for (const a of alerts) {
      assert.match(a.labels?.severity ?? '', /^(info|warning|critical)$/, `${a.alert} severity`);
      assert.ok(a.for, `${a.alert} fires on a single evaluation`);
      for (const k of ['summary', 'description', 'runbook']) assert.ok(a.annotations?.[k], `${a.alert} has no ${k}`);
      assert.ok(a.annotations?.runbook?.includes(`"Runbook: ${a.alert}"`), `${a.alert} runbook names its README section`);
      assert.match(readme, new RegExp(`^#+ Runbook: ${a.alert}$`, 'm'), `deploy/README.md has no "Runbook: ${a.alert}" section`);
    }
  });

  it('give every alert a runbook_url at the GitHub anchor of its README section, as kubernetes-mixin does', () => {
    for (const a of alerts) {
      // GitHub's anchor for "### Runbook: RpcscopeX": lower case, punctuation dropped, spaces as hyphens.
      const anchor = `Runbook: ${a.alert ?? ''}`.toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-');
      assert.equal(a.annotations?.runbook_url, `${RUNBOOK_BASE}#${anchor}`, `${a.alert} runbook_url`);
    }
  });
});
