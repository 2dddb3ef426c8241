// PromQL as the dashboards hold it: Grafana variables substituted, expressions
// collected from panels and variables, metric names picked out, and syntax
// checked by promtool (Prometheus' own parser).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';

export const PROMTOOL_BIN = process.env.RPCSCOPE_PROMTOOL ?? '/usr/bin/promtool';

export interface LabelledExpr {
  /** Where the expression lives, for messages: dashboard, panel, refId. */
  where: string;
  expr: string;
}

/** Replaces `$name`, `${name}` and `$__name` with the given values; throws on one it was not given. */
export function substitute(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const name = braced ?? bare ?? '';
    const value = values[name];
    if (value === undefined) throw new Error(`unknown variable ${whole} in ${expr}`);
    return value;
  });
}

interface DashboardJson {
  title?: string;
  panels?: { title?: string; targets?: { refId?: string; expr?: string }[]; panels?: unknown[] }[];
  templating?: { list?: { name: string; type: string; definition?: string; query?: unknown }[] };
}

/** Every PromQL expression of a dashboard: panel targets, and the selectors inside label_values() variables. */
export function dashboardExpressions(d: DashboardJson): LabelledExpr[] {
  const out: LabelledExpr[] = [];
  for (const p of d.panels ?? []) {
    for (const t of p.targets ?? []) {
      if (typeof t.expr === 'string') out.push({ where: `${d.title} / ${p.title} / ${t.refId}`, expr: t.expr });
    }
  }
  for (const v of d.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query as { query?: string } | undefined)?.query;
    const inner = /^label_values\((.*),\s*(\w+)\)$/s.exec(q ?? '');
    if (!inner?.[1]) throw new Error(`${d.title}: variable ${v.name} is not label_values(selector, label): ${q}`);
    out.push({ where: `${d.title} / variable ${v.name}`, expr: inner[1] });
  }
  return out;
}

const KEYWORDS = new Set([
  'and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan', 'atan2',
]);

/** Metric names an expression reads (series selectors, not functions, labels or keywords). */
export function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(\d[\w.]*)|([a-zA-Z_:][\w:]*)(\s*\()?/g)) {
    const ident = m[2];
    if (!ident || m[3] !== undefined || KEYWORDS.has(ident.toLowerCase())) continue;
    names.add(ident);
  }
  return [...names];
}

export interface PromtoolResult {
  ok: boolean;
  output: string;
}

export function promtool(args: string[], cwd?: string): PromtoolResult {
  const r = spawnSync(PROMTOOL_BIN, args, { encoding: 'utf8', cwd });
  if (r.error) throw r.error;
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

/**
 * Parses each expression with promtool by writing them as recording rules of
 * a throwaway rule file; returns one message per expression that does not parse.
 */
export function parseErrors(exprs: LabelledExpr[]): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'rpcscope-promql-'));
  try {
    const errors: string[] = [];
    // One file per expression, so each error is pinned to its expression.
    const files = exprs.map((e, i) => {
      const file = join(dir, `expr-${i}.yml`);
      writeFileSync(file, stringify({ groups: [{ name: `expr_${i}`, rules: [{ record: `rpcscope_dashboard_expr_${i}`, expr: e.expr }] }] }));
      return file;
    });
    const all = promtool(['check', 'rules', ...files]);
    if (all.ok) return [];
    exprs.forEach((e, i) => {
      const file = files[i] ?? '';
      if (all.output.includes(`${file}:`) || all.output.includes(`${file} `)) {
        const single = promtool(['check', 'rules', file]);
        if (!single.ok) errors.push(`${e.where}: ${single.output.trim()}`);
      }
    });
    if (errors.length === 0) errors.push(all.output.trim());
    return errors;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
