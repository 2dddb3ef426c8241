// The metric contract, read from the repo's docs/metrics.md: every series name
// and label the dashboards, rules and tests may use.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const METRICS_MD = process.env.RPCSCOPE_METRICS_MD ?? join(REPO_ROOT, 'docs', 'metrics.md');

export type MetricType = 'counter' | 'gauge' | 'histogram';

export interface ContractMetric {
  name: string;
  type: MetricType;
  labels: string[];
  /** Exported only by sidecars started with a flag: `--metrics-detail full`, `--transcode` (its meaning says so first). */
  optIn: boolean;
}

export interface Contract {
  metrics: Map<string, ContractMetric>;
  /** Names a Prometheus scrape of a sidecar may hold: histograms as _bucket/_sum/_count (and by their own name where native), plus the process series. */
  seriesNames: Set<string>;
  /** The histograms `--histograms native` serves as native histograms, one series each named as the family. */
  nativeHistograms: Set<string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;

export function parseContract(markdown: string): Contract {
  const metrics = new Map<string, ContractMetric>();
  const seriesNames = new Set<string>();
  // Table rows: | `name` | type | labels | meaning |
  for (const line of markdown.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 5) continue;
    const name = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    const type = cells[2];
    if (!name || !NAME.test(name) || (type !== 'counter' && type !== 'gauge' && type !== 'histogram')) continue;
    const labelCell = cells[3] ?? '';
    const labels = labelCell === '(none)' ? [] : labelCell.split(',').map((l) => l.trim()).filter(Boolean);
    metrics.set(name, { name, type, labels, optIn: /^(`--metrics-detail full` only|only with )/i.test(cells[4] ?? '') });
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) seriesNames.add(name + s);
    else seriesNames.add(name);
  }
  // Process metrics are named in prose under "## Process".
  const process = markdown.split(/^## Process\s*$/m)[1] ?? '';
  for (const m of process.matchAll(/`([^`]+)`/g)) {
    const name = m[1] ?? '';
    if (NAME.test(name)) seriesNames.add(name);
  }
  // The native families are named in the first paragraph under "## Native histograms".
  const nativeHistograms = new Set<string>();
  const native = (markdown.split(/^## Native histograms\s*$/m)[1] ?? '').trim().split(/\n\s*\n/)[0] ?? '';
  for (const m of native.matchAll(/`([^`]+)`/g)) {
    const name = m[1] ?? '';
    if (metrics.get(name)?.type !== 'histogram') continue;
    nativeHistograms.add(name);
    seriesNames.add(name);
  }
  return { metrics, seriesNames, nativeHistograms };
}

export function loadContract(path = METRICS_MD): Contract {
  return parseContract(readFileSync(path, 'utf8'));
}
