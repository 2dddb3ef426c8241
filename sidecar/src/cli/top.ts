// `rpcscope top`: a live table, redrawn every --interval (1 s): per operation
// and protocol the call rate, success ratio, p50/p99, calls in flight and bytes
// per call; per pod its share of the calls and the skew. From one or several
// sidecars' admin ports (--admin, repeatable) or from Prometheus.
import { adminBase } from './admin-client.ts';
import { durationFlag, numberFlag, readFlags, USAGE_EXIT, UsageError } from './cli-args.ts';
import { DiagnoseContext } from './diagnose-context.ts';
import type { CommandIo } from './diagnose.ts';
import { PrometheusApi } from './prometheus-api.ts';
import { AdminSource } from './top-admin.ts';
import type { TopView } from './top-model.ts';
import { PrometheusSource } from './top-prometheus.ts';
import { renderLines, renderTable, SORT_KEYS, type SortKey, type TableOptions } from './top-table.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';

export const TOP_HELP = `usage: rpcscope top --admin HOST:PORT [--admin HOST:PORT ...] | --prometheus URL [flags]

A live table of the calls through one or several sidecars, redrawn every
second: per operation and protocol the rate, success ratio, p50/p99, calls in
flight and bytes per call; per pod its share of the calls and the skew.
Plain lines, one per row and interval, when stdout is not a terminal.

  --admin HOST:PORT         a sidecar's admin address; repeat for several (their /metrics)
  --prometheus URL          or read the fleet from Prometheus
  --namespace N, --service S, --cluster C   with --prometheus: the scope
  --window D                with --prometheus: the rate window (default 1m)
  --direction D             only inbound or outbound calls
  --sort K                  ${SORT_KEYS.join(', ')} (default rate)
  --filter REGEX            only operations or protocols matching
  --limit N                 at most N rows (default 30)
  --interval D              how often (default 1s)
  --iterations N            stop after N tables (default: until Ctrl-C)
  --help                    this help
`;

const OPTIONS = {
  admin: { type: 'string', multiple: true },
  prometheus: { type: 'string' },
  namespace: { type: 'string' },
  service: { type: 'string' },
  cluster: { type: 'string' },
  window: { type: 'string', default: '1m' },
  direction: { type: 'string' },
  sort: { type: 'string', default: 'rate' },
  filter: { type: 'string' },
  limit: { type: 'string', default: '30' },
  interval: { type: 'string', default: '1s' },
  iterations: { type: 'string' },
  help: { type: 'boolean' },
} as const;

export async function top(argv: readonly string[], io: CommandIo): Promise<number> {
  let read: () => Promise<TopView>;
  let table: TableOptions;
  let intervalMs: number;
  let iterations = Infinity;
  let source: string;
  try {
    const f = readFlags('top', argv, OPTIONS);
    if (f.help) {
      io.stdout.write(TOP_HELP);
      return 0;
    }
    const admins = f.admin ?? [];
    if ((admins.length === 0) === (f.prometheus === undefined)) throw new UsageError('top: give either --admin HOST:PORT (one or more sidecars) or --prometheus URL');
    if (!(SORT_KEYS as readonly string[]).includes(f.sort)) throw new UsageError(`top: --sort: ${JSON.stringify(f.sort)}: one of ${SORT_KEYS.join(', ')}`);
    let filter: RegExp | undefined;
    try {
      filter = f.filter === undefined ? undefined : new RegExp(f.filter, 'u');
    } catch (err) {
      throw new UsageError(`top: --filter: ${(err as Error).message}`);
    }
    table = { sort: f.sort as SortKey, filter, limit: numberFlag('top', 'limit', f.limit, 1) };
    intervalMs = durationFlag('top', 'interval', f.interval);
    if (f.iterations !== undefined) iterations = numberFlag('top', 'iterations', f.iterations, 1);
    if (admins.length > 0) {
      const bases = admins.map(adminBase);
      const admin = new AdminSource(bases, f.direction);
      read = () => admin.read();
      source = bases.join(', ');
    } else {
      const api = new PrometheusApi(f.prometheus!);
      const windowMs = durationFlag('top', 'window', f.window);
      const settings = {
        scope: { namespace: f.namespace, service: f.service, cluster: f.cluster },
        since: { seconds: Math.max(1, Math.round(windowMs / 1000)), offsetSeconds: 0, text: f.window },
        before: undefined,
        minCalls: 1,
        baseline: 'rest',
        metricsDetail: 'standard' as const,
        adminPort: undefined,
        adminHeaders: {},
      };
      const prom = new PrometheusSource(() => new DiagnoseContext(api, settings), f.direction);
      read = () => prom.read();
      source = `${api.base} (rates over ${f.window})`;
    }
  } catch (err) {
    if (!hasCode(err, ErrorCode.USAGE)) throw err;
    io.stderr.write(`rpcscope ${err.message}\n`);
    return USAGE_EXIT;
  }

  const tty = (io.stdout as NodeJS.WriteStream).isTTY === true;
  // The admin source needs two scrapes for a rate: the first one only sets the mark.
  let shown = 0;
  for (let round = 0; shown < iterations; round++) {
    const started = Date.now();
    let view: TopView;
    try {
      view = await read();
    } catch (err) {
      if (!hasCode(err, ErrorCode.PROMETHEUS_API)) throw err;
      io.stderr.write(`rpcscope top: ${err.message}\n`);
      return USAGE_EXIT;
    }
    if (round > 0 || view.rows.some((r) => Number.isFinite(r.rate))) {
      const at = new Date();
      if (tty) io.stdout.write(`\x1b[H\x1b[2J${renderTable(view, table, `rpcscope top  ${source}  ${at.toISOString().slice(11, 19)}  sorted by ${table.sort}`).join('\n')}\n`);
      else io.stdout.write(renderLines(view, table, at).map((l) => `${l}\n`).join(''));
      shown++;
    }
    if (shown >= iterations) break;
    await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (Date.now() - started))));
  }
  return 0;
}
