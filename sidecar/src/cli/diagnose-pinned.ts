// Pinned pods, the sticky-HTTP/2 signature: per service, each pod's share of
// the inbound calls and the skew (max / mean per-pod call rate, 1 is even); the
// pods far above their share; how their calls sit on few client connections
// (rpcscope_connection_calls for the closed ones, /debug/connections for the
// open ones when the pods' admin ports answer). kube-proxy balances
// connections, not calls.
import { adminBase } from './admin-client.ts';
import { serviceKey, sumBy, type DiagnoseContext } from './diagnose-context.ts';
import { RUNBOOKS, type Finding } from './diagnose-finding.ts';
import { count, durationText, pct, perSecond } from './format.ts';

/** Skew past which a service is reported; the RpcscopePodLoadSkew alert's. */
export const SKEW_WARNING = 1.5;
/** Skew reported as critical: most of the load on one pod (capped by the pod count: N pods give at most N). */
const SKEW_CRITICAL = 2.5;
/**
 * --since at or past this many times the recording rule's 1 m window reads the
 * per-pod rate from the rule; a shorter window reads the raw counters, so that
 * the minute before it does not leak in.
 */
const RULE_WINDOWS = 10;

interface OpenConnection {
  peer: string;
  http_version: string;
  age_seconds: number;
  calls: number;
  share: number;
}

/** The pod's open client connections, busiest first; undefined when its admin port does not answer. */
async function openConnections(ctx: DiagnoseContext, adminUrl: string): Promise<OpenConnection[] | string> {
  try {
    const res = await fetch(`${adminUrl}/debug/connections`, { headers: ctx.settings.adminHeaders, signal: AbortSignal.timeout(3000) });
    if (!res.ok) return `${adminUrl}/debug/connections answered HTTP ${res.status}`;
    const body = (await res.json()) as { downstream?: { list?: OpenConnection[] } };
    return body.downstream?.list ?? [];
  } catch (err) {
    return `${adminUrl}/debug/connections: ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}`;
  }
}

/** Admin base URL per `namespace/service/pod`, from Prometheus's targets (the port replaced by --admin-port). */
async function adminUrls(ctx: DiagnoseContext): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const t of await ctx.api.targets()) {
    const { namespace, service, pod } = t.labels;
    if (pod === undefined) continue;
    const url = new URL(t.scrapeUrl);
    if (ctx.settings.adminPort !== undefined) url.port = String(ctx.settings.adminPort);
    out.set(`${namespace ?? ''}/${service ?? ''}/${pod}`, adminBase(url.origin));
  }
  return out;
}

export async function pinnedPods(ctx: DiagnoseContext): Promise<Finding[]> {
  const { since, minCalls } = ctx.settings;
  const rulesLoaded = since.seconds >= RULE_WINDOWS * 60 && (await ctx.query(`count(namespace_service_pod:rpcscope_calls_total:rate2m${ctx.sel()})`)).length > 0;
  // Per-pod rate over the window; pods with no call at all are there at 0 (their target_info), as the rule has them.
  const rateQuery = rulesLoaded
    ? `avg_over_time(namespace_service_pod:rpcscope_calls_total:rate2m${ctx.sel()}${ctx.range()})`
    : `${ctx.increase('rpcscope_calls_total', 'direction="inbound"', 'namespace, service, pod')} / ${since.seconds} or 0 * group by (namespace, service, pod) (last_over_time(target_info${ctx.sel()}${ctx.range()}))`;
  const rates = await ctx.query(rateQuery);
  const byService = new Map<string, Array<{ pod: string; rate: number }>>();
  for (const s of rates) {
    const key = serviceKey(s.labels);
    if (s.labels.pod === undefined || s.labels.service === undefined) continue;
    byService.set(key, [...(byService.get(key) ?? []), { pod: s.labels.pod, rate: s.value }]);
  }
  const connectionCallsQuery = (stat: 'sum' | 'count'): string => ctx.increase(`rpcscope_connection_calls_${stat}`, 'side="downstream"', 'namespace, service, pod');
  const openQuery = `sum by (namespace, service, pod) (rpcscope_connections_active${ctx.sel('side="downstream"')})`;
  const findings: Finding[] = [];
  let admins: Map<string, string> | undefined;
  for (const [key, pods] of byService) {
    const total = pods.reduce((a, p) => a + p.rate, 0);
    if (pods.length < 2 || total * since.seconds < minCalls) continue;
    const mean = total / pods.length;
    const skew = Math.max(...pods.map((p) => p.rate)) / mean;
    if (skew <= SKEW_WARNING) continue;
    const [namespace, service] = key.split('/') as [string, string];
    pods.sort((a, b) => b.rate - a.rate);
    const hot = pods.filter((p) => p.rate > SKEW_WARNING * mean);

    const podSel = (p: string): boolean => hot.some((h) => h.pod === p);
    const [closedCalls, closedCount, open] = await Promise.all([ctx.query(connectionCallsQuery('sum')), ctx.query(connectionCallsQuery('count')), ctx.query(openQuery)]);
    const inService = (l: Record<string, string>): boolean => serviceKey(l) === key && podSel(l.pod ?? '');
    const closedCallsBy = sumBy(closedCalls.filter((s) => inService(s.labels)), (l) => l.pod ?? '');
    const closedCountBy = sumBy(closedCount.filter((s) => inService(s.labels)), (l) => l.pod ?? '');
    const openBy = sumBy(open.filter((s) => inService(s.labels)), (l) => l.pod ?? '');

    admins ??= await adminUrls(ctx).catch(() => new Map<string, string>());
    const saw = [
      `per pod: ${pods.map((p) => `${p.pod} ${pct(p.rate / total)} (${perSecond(p.rate)})`).join(', ')}; skew ${skew.toFixed(2)} across ${pods.length} pods (1.00 is even)`,
    ];
    const hotFigures = [];
    for (const h of hot) {
      const closed = closedCountBy.get(h.pod) ?? 0;
      const closedCallsN = closedCallsBy.get(h.pod) ?? 0;
      const openN = openBy.get(h.pod) ?? 0;
      const calls = h.rate * since.seconds;
      saw.push(
        `${h.pod}: ${pct(h.rate / total)} of the calls, ${(h.rate / mean).toFixed(2)}x its even share; ${count(openN)} client connection${openN === 1 ? '' : 's'} open now` +
          (closed >= 1 ? `; ${count(closed)} closed in the window carried ${count(closedCallsN)} calls (${count(closedCallsN / closed)} each)` : '; none closed in the window'),
      );
      const adminUrl = admins.get(`${key}/${h.pod}`);
      const conns = adminUrl === undefined ? 'no admin address among Prometheus\'s targets' : await openConnections(ctx, adminUrl);
      if (typeof conns === 'string') saw.push(`  ${h.pod}'s open connections unknown: ${conns}`);
      else for (const c of conns.slice(0, 3)) saw.push(`  ${h.pod} client ${c.peer} (HTTP/${c.http_version}): ${durationText(c.age_seconds * 1000)} old, ${count(c.calls)} calls, ${pct(c.share)} of the calls on its open connections`);
      hotFigures.push({
        pod: h.pod,
        share: h.rate / total,
        calls_per_second: h.rate,
        calls: Math.round(calls),
        open_connections: openN,
        closed_connections: closed,
        calls_on_closed_connections: Math.round(closedCallsN),
        connections: typeof conns === 'string' ? null : conns.slice(0, 10),
      });
    }
    const even = 1 / pods.length;
    findings.push({
      kind: 'pinned_pods',
      severity: skew >= Math.min(SKEW_CRITICAL, 0.9 * pods.length) ? 'critical' : 'warning',
      namespace,
      service,
      title: `${hot.map((h) => h.pod).join(', ')} ${hot.length === 1 ? 'takes' : 'take'} ${pct(hot.reduce((a, h) => a + h.rate, 0) / total)} of ${key}'s inbound calls: skew ${skew.toFixed(2)} across ${pods.length} pods`,
      saw,
      figures: {
        skew,
        pods: pods.map((p) => ({ pod: p.pod, share: p.rate / total, calls_per_second: p.rate })),
        hot: hotFigures,
        calls_per_second: total,
        source: rulesLoaded ? 'rules' : 'raw',
        remedy_skew: 1,
        remedy_share: even,
      },
      why: 'kube-proxy balances connections, not calls: an HTTP/2 client sends every call over one long-lived connection, so the pod it reached takes all of that client\'s calls while the others idle, and it saturates first (latency, errors) long before the service is out of capacity.',
      remedy: [
        `--max-connection-age 5m on ${key}'s inbound sidecars (RPCSCOPE_MAX_CONNECTION_AGE=5m, or max-connection-age: 5m in the rpcscope-config ConfigMap): clients get GOAWAY and reconnect, spreading over the pods; each of the ${pods.length} pods would take about ${pct(even, 0)} (${perSecond(mean)}), skew 1.0 instead of ${skew.toFixed(2)}`,
        'or put the callers behind an outbound sidecar that balances every call: RPCSCOPE_MODE=outbound with --balance least_request and the headless Service as --endpoints (deploy/README.md, "Run outbound mode for a client")',
      ],
      runbook: RUNBOOKS.skew,
      series: ['rpcscope_calls_total', ...(rulesLoaded ? ['namespace_service_pod:rpcscope_calls_total:rate2m'] : []), 'rpcscope_connection_calls', 'rpcscope_connections_active', '/debug/connections'],
      queries: [rateQuery, connectionCallsQuery('sum'), connectionCallsQuery('count'), openQuery],
      score: skew / SKEW_WARNING,
    });
  }
  return findings;
}
