// The findings as text (for a terminal), markdown (for a ticket or a CI
// summary) or JSON (for a program: the schema is in docs/cli.md, and its
// `schema` field names its version).
import type { Finding } from './diagnose-finding.ts';
import { exitStatus } from './diagnose-finding.ts';

export const REPORT_SCHEMA = 'rpcscope.diagnose/v1';

export interface Report {
  prometheus: string;
  scope: { namespace: string | null; service: string | null; cluster: string | null };
  since: string;
  before: string | null;
  /** ISO 8601: when every query was evaluated. */
  evaluatedAt: string;
  /** `namespace/service` of every workload with rpcscope series in the scope. */
  services: string[];
  findings: Finding[];
}

function header(r: Report): string {
  const crit = r.findings.filter((f) => f.severity === 'critical').length;
  const scope = Object.entries(r.scope).filter(([, v]) => v !== null).map(([k, v]) => `${k}=${v}`).join(' ') || 'every service';
  const window = `the last ${r.since}${r.before === null ? '' : `, against ${r.before} ago`}`;
  if (r.findings.length === 0) return `rpcscope diagnose: nothing found in ${r.services.join(', ')} over ${window} (${r.prometheus}, ${scope})`;
  return `rpcscope diagnose: ${r.findings.length} finding${r.findings.length === 1 ? '' : 's'} (${crit} critical, ${r.findings.length - crit} warning) in ${r.services.join(', ')} over ${window} (${r.prometheus}, ${scope}), worst first`;
}

export function renderText(r: Report): string {
  const out = [header(r)];
  const field = (name: string, lines: readonly string[]): string[] => lines.map((l, i) => `  ${(i === 0 ? name : '').padEnd(8)} ${l}`);
  for (const f of r.findings) {
    out.push('', `${f.severity.toUpperCase().padEnd(8)}  ${f.title}`, ...field('saw', f.saw), ...field('why', [f.why]), ...field('remedy', f.remedy), ...field('runbook', [f.runbook]), ...field('series', [f.series.join(', ')]), ...field('query', f.queries.slice(0, 1)));
  }
  return `${out.join('\n')}\n`;
}

export function renderMarkdown(r: Report): string {
  const out = [`## ${header(r)}`];
  for (const f of r.findings) {
    out.push(
      '',
      `### ${f.severity === 'critical' ? 'Critical' : 'Warning'}: ${f.title}`,
      '',
      ...f.saw.map((l) => `- ${l}`),
      '',
      `**Why:** ${f.why}`,
      '',
      '**Remedy:**',
      '',
      ...f.remedy.map((l) => `- ${l}`),
      '',
      `**Runbook:** [${f.runbook}](${f.runbook})`,
      '',
      `**Series:** ${f.series.map((s) => `\`${s}\``).join(', ')}`,
      '',
      '```promql',
      ...f.queries,
      '```',
    );
  }
  return `${out.join('\n')}\n`;
}

export function renderJson(r: Report): string {
  const body = {
    schema: REPORT_SCHEMA,
    prometheus: r.prometheus,
    scope: r.scope,
    since: r.since,
    before: r.before,
    evaluated_at: r.evaluatedAt,
    services: r.services,
    exit_status: exitStatus(r.findings),
    findings: r.findings.map((f) => ({
      kind: f.kind,
      severity: f.severity,
      namespace: f.namespace,
      service: f.service,
      title: f.title,
      saw: f.saw,
      figures: f.figures,
      why: f.why,
      remedy: f.remedy,
      runbook: f.runbook,
      series: f.series,
      queries: f.queries,
    })),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}
