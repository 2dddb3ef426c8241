// `rpcscope diagnose`: reads the fleet's series from Prometheus and prints what
// is wrong, worst first, each finding with its figures, the series and queries
// that show them, why it matters, the remedy and the runbook section. Exit
// status: 0 nothing found, 1 warnings, 2 a critical finding, 3 could not ask
// (Prometheus unreachable or without rpcscope series in the scope, or a usage
// mistake), with one line on stderr saying why. So it runs in CI and in cron.
import { adminHeaders } from './admin-client.ts';
import { durationFlag, numberFlag, readFlags, USAGE_EXIT, UsageError } from './cli-args.ts';
import { DiagnoseContext, type DiagnoseSettings, type Window } from './diagnose-context.ts';
import { budgetsUnderP99, deadlineMisses, withoutDeadline } from './diagnose-deadlines.ts';
import { exitStatus, worstFirst, type Finding } from './diagnose-finding.ts';
import { pinnedPods } from './diagnose-pinned.ts';
import { protocolRegressions } from './diagnose-protocols.ts';
import { renderJson, renderMarkdown, renderText, type Report } from './diagnose-report.ts';
import { resetStorms } from './diagnose-resets.ts';
import { shadowMismatches } from './diagnose-shadow.ts';
import { sidecarHealth } from './diagnose-sidecar.ts';
import { PrometheusApi } from './prometheus-api.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';

export const DIAGNOSE_HELP = `usage: rpcscope diagnose --prometheus URL [flags]

Reads the rpcscope series of a fleet from Prometheus and prints what is wrong,
worst first: pinned pods, calls without deadlines and deadline misses, reset
storms, protocol and migration regressions, shadow mismatches, the sidecars'
own faults. Each finding names its figures, series and queries, why it
matters, the remedy and the runbook section (deploy/README.md).

  --prometheus URL          the Prometheus that scrapes the sidecars (required)
  --namespace N             only this namespace (the target label)
  --service S               only this service (app.kubernetes.io/name)
  --cluster C               only this cluster (external label), with several
  --since D                 the window judged, ending now (default 30m)
  --before A..B             also compare with the window from A ago to B ago, e.g. 2h..1h
  --baseline P              the protocol others are compared with (default rest)
  --min-calls N             calls a figure needs in its window to be judged (default 100)
  --metrics-detail L        the sidecars' level, for the series budget: basic|standard|full (default standard)
  --admin-port P            the sidecars' admin port, when the scrape targets show another
  --admin-token-file FILE   bearer token for the sidecars' /debug/* (or RPCSCOPE_ADMIN_TOKEN_FILE)
  --format F                text, json or markdown (default text)
  --help                    this help

Exit status: 0 nothing found, 1 warnings, 2 a critical finding, 3 could not ask.
`;

const OPTIONS = {
  prometheus: { type: 'string' },
  namespace: { type: 'string' },
  service: { type: 'string' },
  cluster: { type: 'string' },
  since: { type: 'string', default: '30m' },
  before: { type: 'string' },
  baseline: { type: 'string', default: 'rest' },
  'min-calls': { type: 'string', default: '100' },
  'metrics-detail': { type: 'string', default: 'standard' },
  'admin-port': { type: 'string' },
  'admin-token-file': { type: 'string' },
  format: { type: 'string', default: 'text' },
  help: { type: 'boolean' },
} as const;

/** `2h..1h`: the window from 2 h ago to 1 h ago. */
function beforeWindow(text: string): Window {
  const m = /^([^.]+)\.\.([^.]+)$/u.exec(text);
  if (!m) throw new UsageError(`diagnose: --before: ${JSON.stringify(text)} is not a window such as 2h..1h (from 2 h ago to 1 h ago)`);
  const from = durationFlag('diagnose', 'before', m[1]!);
  const to = durationFlag('diagnose', 'before', m[2]!);
  if (from <= to) throw new UsageError(`diagnose: --before: ${text}: the start must lie further back than the end, e.g. 2h..1h`);
  return { seconds: Math.round((from - to) / 1000), offsetSeconds: Math.round(to / 1000), text };
}

const CHECKS = [pinnedPods, withoutDeadline, deadlineMisses, budgetsUnderP99, resetStorms, protocolRegressions, shadowMismatches, sidecarHealth];

export interface CommandIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
}

export async function diagnose(argv: readonly string[], io: CommandIo): Promise<number> {
  let settings: DiagnoseSettings;
  let api: PrometheusApi;
  let format: string;
  try {
    const f = readFlags('diagnose', argv, OPTIONS);
    if (f.help) {
      io.stdout.write(DIAGNOSE_HELP);
      return 0;
    }
    if (f.prometheus === undefined) throw new UsageError('diagnose: --prometheus: missing: give the URL of the Prometheus that scrapes the sidecars, e.g. --prometheus http://prometheus:9090');
    format = f.format;
    if (!['text', 'json', 'markdown'].includes(format)) throw new UsageError(`diagnose: --format: ${JSON.stringify(format)}: text, json or markdown`);
    const detail = f['metrics-detail'];
    if (detail !== 'basic' && detail !== 'standard' && detail !== 'full') throw new UsageError(`diagnose: --metrics-detail: ${JSON.stringify(detail)}: basic, standard or full`);
    const sinceMs = durationFlag('diagnose', 'since', f.since);
    if (sinceMs < 1000) throw new UsageError('diagnose: --since: give a window of at least 1s');
    api = new PrometheusApi(f.prometheus);
    settings = {
      scope: { namespace: f.namespace, service: f.service, cluster: f.cluster },
      since: { seconds: Math.round(sinceMs / 1000), offsetSeconds: 0, text: f.since },
      before: f.before === undefined ? undefined : beforeWindow(f.before),
      minCalls: numberFlag('diagnose', 'min-calls', f['min-calls'], 1),
      baseline: f.baseline,
      metricsDetail: detail,
      adminPort: f['admin-port'] === undefined ? undefined : numberFlag('diagnose', 'admin-port', f['admin-port'], 1),
      adminHeaders: adminHeaders('diagnose', f['admin-token-file'], io.env),
    };
  } catch (err) {
    if (!hasCode(err, ErrorCode.USAGE)) throw err;
    io.stderr.write(`rpcscope ${err.message}\n`);
    return USAGE_EXIT;
  }

  const ctx = new DiagnoseContext(api, settings);
  let findings: Finding[];
  let services: string[];
  try {
    services = (await ctx.query(`group by (namespace, service) (rpcscope_build_info${ctx.sel()})`)).map((s) => `${s.labels.namespace ?? ''}/${s.labels.service ?? ''}`).sort();
    if (services.length === 0) {
      io.stderr.write(`rpcscope diagnose: Prometheus at ${api.base} has no rpcscope series${ctx.sel() === '{}' ? '' : ` matching ${ctx.sel()}`}: is it scraping the sidecars (rpcscope_build_info)?\n`);
      return USAGE_EXIT;
    }
    findings = (await Promise.all(CHECKS.map((check) => check(ctx)))).flat().sort(worstFirst);
  } catch (err) {
    if (!hasCode(err, ErrorCode.PROMETHEUS_API)) throw err;
    io.stderr.write(`rpcscope diagnose: ${err.message}\n`);
    return USAGE_EXIT;
  }
  const report: Report = {
    prometheus: api.base,
    scope: { namespace: settings.scope.namespace ?? null, service: settings.scope.service ?? null, cluster: settings.scope.cluster ?? null },
    since: settings.since.text,
    before: settings.before?.text ?? null,
    evaluatedAt: new Date(ctx.time * 1000).toISOString(),
    services,
    findings,
  };
  io.stdout.write(format === 'json' ? renderJson(report) : format === 'markdown' ? renderMarkdown(report) : renderText(report));
  return exitStatus(findings);
}
