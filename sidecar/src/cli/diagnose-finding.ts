// One finding of `rpcscope diagnose`: what it saw (the figures, the series and
// the queries that show them), why it matters, the remedy as the exact flag or
// manifest change, and the runbook section. Findings are ranked worst first:
// critical before warning, then by how far past its threshold each one is.

export type Severity = 'warning' | 'critical';

/** The checks diagnose runs, each a kind of finding. */
export type FindingKind =
  | 'pinned_pods'
  | 'calls_without_deadline'
  | 'deadline_misses'
  | 'deadline_budget_under_p99'
  | 'client_cancels'
  | 'upstream_refusing'
  | 'upstream_lost'
  | 'connections_cut'
  | 'protocol_regression'
  | 'migration_regression'
  | 'shadow_mismatch'
  | 'sidecar_faults';

export interface Finding {
  kind: FindingKind;
  severity: Severity;
  /** The workload it is about, as the target labels name it. */
  namespace: string;
  service: string;
  /** One line: what is wrong, with the figure that says so. */
  title: string;
  /** What it saw, one fact a line, with figures. */
  saw: string[];
  /** The same figures for a program: the JSON schema's `figures` (docs/cli.md). */
  figures: Record<string, unknown>;
  why: string;
  /** The remedy: flags, manifest or client changes, each a line. */
  remedy: string[];
  /** `deploy/README.md#…`: the runbook section. */
  runbook: string;
  /** The series the figures come from. */
  series: string[];
  /** The PromQL that shows them, to paste into Prometheus or Grafana. */
  queries: string[];
  /** How many thresholds past (1 is just past): orders findings of one severity. */
  score: number;
}

const SEVERITY_RANK: Record<Severity, number> = { critical: 2, warning: 1 };

export function worstFirst(a: Finding, b: Finding): number {
  return SEVERITY_RANK[b.severity] - SEVERITY_RANK[a.severity] || b.score - a.score || a.title.localeCompare(b.title);
}

/** 0 nothing found, 1 findings at warning, 2 a critical one. */
export function exitStatus(findings: readonly Finding[]): 0 | 1 | 2 {
  if (findings.some((f) => f.severity === 'critical')) return 2;
  return findings.length > 0 ? 1 : 0;
}

export const RUNBOOKS = {
  skew: 'deploy/README.md#runbook-rpcscopepodloadskew',
  deadlineMiss: 'deploy/README.md#runbook-rpcscopedeadlinemissratiohigh',
  resets: 'deploy/README.md#runbook-rpcscopestreamresetspike',
  withoutDeadline: 'deploy/README.md#runbook-rpcscopecallswithoutdeadline',
  errors: 'deploy/README.md#runbook-rpcscopeerrorratiohigh',
  targetDown: 'deploy/README.md#runbook-rpcscopetargetdown',
  protocols: 'deploy/README.md#runbook-protocol-regressions',
  sidecar: 'deploy/README.md#runbook-the-sidecar-itself',
} as const;
