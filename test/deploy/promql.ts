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

/** Seconds in a PromQL duration such as `5m`, `1h30m` or `90s`. */
export function durationSeconds(d: string): number {
  const unit: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400, w: 604_800, y: 31_536_000 };
  let total = 0;
  let rest = d.trim();
  for (const m of d.matchAll(/(\d+)(ms|s|m|h|d|w|y)/g)) {
    total += Number(m[1]) * (unit[m[2] ?? ''] ?? NaN);
    rest = rest.replace(m[0], '');
  }
  if (rest !== '' || d.trim() === '') throw new Error(`not a PromQL duration: ${d}`);
  return total;
}

export interface RangeRead {
  /** The metric names the range reads: one for `name{…}[d]`, those inside a subquery's expression for `(…)[d:s]`. */
  metrics: string[];
  range: string;
  seconds: number;
  /** The `offset` after the range, in seconds (0 without one). */
  offsetSeconds: number;
}

/**
 * Every range an expression reads: range vector selectors (`rate(x{…}[5m])`)
 * and subqueries (`max_over_time((…)[30m:1m])`), each with the metric names
 * it covers.
 */
export function rangeReads(expr: string): RangeRead[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, (s) => '"'.padEnd(s.length - 1, ' ') + '"');
  const out: RangeRead[] = [];
  for (const m of text.matchAll(/\[\s*([0-9a-z]+)\s*(?::\s*[0-9a-z]*\s*)?\]/g)) {
    const range = m[1] ?? '';
    let end = (m.index ?? 0) - 1;
    while (end >= 0 && /\s/.test(text[end] ?? '')) end--;
    let start = end;
    if (text[end] === '}') {
      // name{matchers}[d]: back over the matchers, then the name.
      start = text.lastIndexOf('{', end);
      let n = start - 1;
      while (n >= 0 && /[\w:]/.test(text[n] ?? '')) n--;
      start = n + 1;
    } else if (text[end] === ')') {
      // (expr)[d:s]: back to the matching parenthesis.
      let depth = 0;
      for (start = end; start >= 0; start--) {
        if (text[start] === ')') depth++;
        else if (text[start] === '(' && --depth === 0) break;
      }
    } else {
      while (start >= 0 && /[\w:]/.test(text[start] ?? '')) start--;
      start++;
    }
    const offset = /^\s*offset\s+([0-9a-z]+)/.exec(text.slice((m.index ?? 0) + m[0].length))?.[1];
    out.push({ metrics: metricNames(text.slice(start, end + 1)), range, seconds: durationSeconds(range), offsetSeconds: offset ? durationSeconds(offset) : 0 });
  }
  return out;
}
