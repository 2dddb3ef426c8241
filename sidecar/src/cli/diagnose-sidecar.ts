// The sidecar itself: exceptions it contained (a bug every time), calls and
// connections turned away at its limits, a busy event loop (every call through
// the pod waits on it), targets Prometheus cannot scrape (their calls are
// missing from every other finding), and a series count near the budget of the
// sidecars' --metrics-detail level (docs/metrics.md, "Detail levels and cost").
import { serviceKey, type DiagnoseContext } from './diagnose-context.ts';
import { RUNBOOKS, type Finding, type Severity } from './diagnose-finding.ts';
import { count, ms } from './format.ts';

/** Series per sidecar each level is sized for (docs/metrics.md): past 80 % of it is reported. */
export const SERIES_BUDGET = { basic: 2_500, standard: 2_500, full: 11_000 } as const;
const BUDGET_SHARE = 0.8;
/** Event-loop delay p99 over the window: past 100 ms, every call waits that long for the sidecar. */
const LAG_SECONDS = 0.1;

interface Problem {
  severity: Severity;
  line: string;
  remedy: string;
  runbook: string;
  figure: Record<string, unknown>;
}

export async function sidecarHealth(ctx: DiagnoseContext): Promise<Finding[]> {
  const by = 'namespace, service, pod';
  const q = {
    internal: ctx.increase('rpcscope_internal_errors_total', '', `${by}, where`),
    queue: ctx.increase('rpcscope_upstream_queue_overflow_total', '', by),
    overflow: ctx.increase('rpcscope_connections_overflow_total', '', by),
    lag: `max by (${by}) (avg_over_time(nodejs_eventloop_lag_p99_seconds${ctx.sel()}${ctx.range()}))`,
    down: `up${ctx.sel()} == 0 and on (job) group by (job) (rpcscope_build_info${ctx.sel()})`,
    series: `count by (${by}) (${ctx.sel('__name__=~"rpcscope_.+"')})`,
  };
  const [internal, queue, overflow, lag, down, series] = await Promise.all(Object.values(q).map((e) => ctx.query(e)));
  const budget = SERIES_BUDGET[ctx.settings.metricsDetail];
  const problems = new Map<string, Problem[]>();
  const add = (labels: Record<string, string>, p: Problem): void => {
    const key = serviceKey(labels);
    problems.set(key, [...(problems.get(key) ?? []), p]);
  };
  for (const s of internal!) {
    if (s.value < 0.5) continue;
    add(s.labels, { severity: 'critical', line: `${s.labels.pod}: ${count(s.value)} internal errors at ${s.labels.where}`, remedy: 'an internal error is a bug: report it with the first one\'s stack from the sidecar\'s log ("internal error contained")', runbook: RUNBOOKS.sidecar, figure: { pod: s.labels.pod, internal_errors: Math.round(s.value), where: s.labels.where } });
  }
  for (const s of queue!) {
    if (s.value < 0.5) continue;
    add(s.labels, { severity: 'warning', line: `${s.labels.pod}: ${count(s.value)} calls answered UNAVAILABLE at once: the app's HTTP/1.1 connections and queue were full`, remedy: 'raise --upstream-max-connections (and --upstream-max-pending) if the app can take more calls at once, or scale the app out', runbook: RUNBOOKS.sidecar, figure: { pod: s.labels.pod, queue_overflows: Math.round(s.value) } });
  }
  for (const s of overflow!) {
    if (s.value < 0.5) continue;
    add(s.labels, { severity: 'warning', line: `${s.labels.pod}: ${count(s.value)} client connections turned away at --max-connections`, remedy: 'raise --max-connections if the pod has the memory (SECURITY.md), or find the client opening so many', runbook: RUNBOOKS.sidecar, figure: { pod: s.labels.pod, connections_overflow: Math.round(s.value) } });
  }
  for (const s of lag!) {
    if (!(s.value >= LAG_SECONDS)) continue;
    add(s.labels, { severity: 'warning', line: `${s.labels.pod}: event loop delay p99 ${ms(s.value)} on average over the window`, remedy: 'give the sidecar CPU (no CPU limit, a request that covers its load) and check the node\'s load; the sidecar\'s CPU per call is in the README\'s benchmarks', runbook: RUNBOOKS.sidecar, figure: { pod: s.labels.pod, eventloop_lag_p99_seconds: s.value } });
  }
  for (const s of down!) {
    add(s.labels, { severity: 'warning', line: `${s.labels.pod ?? s.labels.instance}: target down (up == 0): its calls are missing from every figure`, remedy: 'check the target on the Prometheus targets page and the sidecar container\'s logs and restarts', runbook: RUNBOOKS.targetDown, figure: { pod: s.labels.pod ?? null, instance: s.labels.instance, down: true } });
  }
  for (const s of series!) {
    if (s.value < BUDGET_SHARE * budget) continue;
    add(s.labels, { severity: 'warning', line: `${s.labels.pod}: ${count(s.value)} series, ${Math.round((s.value / budget) * 100)} % of the ${count(budget)} --metrics-detail ${ctx.settings.metricsDetail} is sized for`, remedy: `lower --max-methods (methods past it fold into _OTHER)${ctx.settings.metricsDetail === 'full' ? ' or go back to --metrics-detail standard' : ''}; Prometheus holds this many series per pod (deploy/README.md, "Sizing Prometheus for a fleet")`, runbook: RUNBOOKS.sidecar, figure: { pod: s.labels.pod, series: s.value, budget } });
  }
  return [...problems].map(([key, list]) => {
    const [namespace, service] = key.split('/') as [string, string];
    const critical = list.some((p) => p.severity === 'critical');
    return {
      kind: 'sidecar_faults',
      severity: critical ? 'critical' : 'warning',
      namespace,
      service,
      title: `${key}'s sidecars: ${list.map((p) => p.line).slice(0, 2).join('; ')}${list.length > 2 ? `; and ${list.length - 2} more` : ''}`,
      saw: list.map((p) => p.line),
      figures: { problems: list.map((p) => p.figure) },
      why: 'The sidecar is in every call\'s path: its own errors fail calls, its limits turn calls away, a slow event loop delays every call, and a sidecar Prometheus cannot scrape hides its calls from every figure.',
      remedy: [...new Set(list.map((p) => p.remedy))],
      runbook: list.find((p) => p.runbook === RUNBOOKS.targetDown) && list.every((p) => p.runbook === RUNBOOKS.targetDown) ? RUNBOOKS.targetDown : RUNBOOKS.sidecar,
      series: ['rpcscope_internal_errors_total', 'rpcscope_upstream_queue_overflow_total', 'rpcscope_connections_overflow_total', 'nodejs_eventloop_lag_p99_seconds', 'up', 'rpcscope_*'],
      queries: Object.values(q),
      score: list.length * (critical ? 10 : 1),
    } satisfies Finding;
  });
}
