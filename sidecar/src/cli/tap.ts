// `rpcscope tap --admin HOST:PORT`: the calls passing through one sidecar now,
// one line each, read from its /debug/tap stream (NDJSON). The filters and the
// rate go to the sidecar, which applies them before a line is written: a
// filtered-out call never crosses the network.
import { adminBase, adminHeaders, refusedReason } from './admin-client.ts';
import { durationFlag, numberFlag, readFlags, USAGE_EXIT, UsageError } from './cli-args.ts';
import type { CommandIo } from './diagnose.ts';
import { bytes, ms } from './format.ts';
import { ErrorCode, hasCode } from '../core/errors.ts';

export const TAP_HELP = `usage: rpcscope tap --admin HOST:PORT [flags]

Shows the calls passing through one sidecar now, one line each: time,
direction, protocol, method, code, HTTP status, duration, bytes, upstream,
peer, reset, deadline. Header values and bodies never leave the sidecar.
/debug/tap answers loopback callers, or a bearer token from --admin-token-file.

  --admin HOST:PORT         the sidecar's admin address (required)
  --method M                only this method or operation
  --protocol P              only grpc, grpc_web, connect, rest or trpc
  --code C                  only this code (OK, UNAVAILABLE, ...)
  --direction D             only inbound or outbound
  --min-duration D          only calls that took at least D (e.g. 100ms)
  --max-rate N              at most N lines a second, the rest counted (default 100, at most 1000)
  --count N                 stop after N calls
  --format F                text or json (the sidecar's lines as they come) (default text)
  --admin-token-file FILE   bearer token for /debug/* (or RPCSCOPE_ADMIN_TOKEN_FILE)
  --help                    this help
`;

const OPTIONS = {
  admin: { type: 'string' },
  method: { type: 'string' },
  protocol: { type: 'string' },
  code: { type: 'string' },
  direction: { type: 'string' },
  'min-duration': { type: 'string' },
  'max-rate': { type: 'string' },
  count: { type: 'string' },
  format: { type: 'string', default: 'text' },
  'admin-token-file': { type: 'string' },
  help: { type: 'boolean' },
} as const;

interface TapLine {
  kind: 'call' | 'skipped';
  time?: string;
  direction?: string;
  protocol?: string;
  method?: string;
  code?: string;
  http_status?: string;
  duration_ms?: number;
  request_bytes?: number;
  response_bytes?: number;
  upstream?: string;
  peer?: string;
  reset?: string;
  deadline_ms?: number | null;
  rate_limited?: number;
  slow_reader?: number;
}

/** One call as a terminal line: fixed-width columns, a dash where a field is empty. */
export function tapText(l: TapLine): string {
  if (l.kind === 'skipped') return `# not shown: ${l.rate_limited ?? 0} over --max-rate, ${l.slow_reader ?? 0} dropped while this reader was behind`;
  const dash = (v: string | undefined): string => (v === undefined || v === '' ? '-' : v);
  return [
    (l.time ?? '').slice(11, 23),
    (l.direction === 'inbound' ? 'in' : 'out').padEnd(3),
    dash(l.protocol).padEnd(8),
    dash(l.method).padEnd(36),
    dash(l.code).padEnd(17),
    dash(l.http_status).padEnd(3),
    ms((l.duration_ms ?? 0) / 1000).padStart(9),
    `req ${bytes(l.request_bytes ?? 0)}`.padEnd(12),
    `resp ${bytes(l.response_bytes ?? 0)}`.padEnd(13),
    `upstream ${dash(l.upstream)}`,
    `peer ${dash(l.peer)}`,
    `reset ${dash(l.reset)}`,
    `deadline ${l.deadline_ms === null || l.deadline_ms === undefined ? '-' : ms(l.deadline_ms / 1000)}`,
  ].join('  ');
}

export async function tap(argv: readonly string[], io: CommandIo): Promise<number> {
  let url: string;
  let headers: Record<string, string>;
  let limit = Infinity;
  let json: boolean;
  try {
    const f = readFlags('tap', argv, OPTIONS);
    if (f.help) {
      io.stdout.write(TAP_HELP);
      return 0;
    }
    if (f.admin === undefined) throw new UsageError('tap: --admin: missing: give the sidecar\'s admin address, e.g. --admin 127.0.0.1:14090');
    if (f.format !== 'text' && f.format !== 'json') throw new UsageError(`tap: --format: ${JSON.stringify(f.format)}: text or json`);
    json = f.format === 'json';
    const params = new URLSearchParams();
    for (const key of ['method', 'protocol', 'code', 'direction'] as const) if (f[key] !== undefined) params.set(key, f[key]);
    if (f['min-duration'] !== undefined) params.set('min_duration_ms', String(durationFlag('tap', 'min-duration', f['min-duration'])));
    if (f['max-rate'] !== undefined) params.set('max_rate', String(numberFlag('tap', 'max-rate', f['max-rate'], 1)));
    if (f.count !== undefined) limit = numberFlag('tap', 'count', f.count, 1);
    url = `${adminBase(f.admin)}/debug/tap${params.size > 0 ? `?${params}` : ''}`;
    headers = { accept: 'application/x-ndjson', ...adminHeaders('tap', f['admin-token-file'], io.env) };
  } catch (err) {
    if (!hasCode(err, ErrorCode.USAGE)) throw err;
    io.stderr.write(`rpcscope ${err.message}\n`);
    return USAGE_EXIT;
  }

  const stop = new AbortController();
  let res: Response;
  try {
    res = await fetch(url, { headers, signal: stop.signal });
  } catch (err) {
    io.stderr.write(`rpcscope tap: cannot reach ${url}: ${(err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message}\n`);
    return USAGE_EXIT;
  }
  if (!res.ok || res.body === null) {
    const text = (await res.text()).trim();
    io.stderr.write(`rpcscope tap: ${url}: HTTP ${res.status}: ${refusedReason(res.status) ?? text}\n`);
    return USAGE_EXIT;
  }
  let shown = 0;
  let rest = '';
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) {
      rest += decoder.decode(chunk as Uint8Array, { stream: true });
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const text of lines) {
        if (text === '') continue;
        const line = JSON.parse(text) as TapLine;
        io.stdout.write(`${json ? text : tapText(line)}\n`);
        if (line.kind === 'call' && ++shown >= limit) {
          stop.abort();
          return 0;
        }
      }
    }
  } catch (err) {
    if (stop.signal.aborted) return 0;
    io.stderr.write(`rpcscope tap: the stream from ${url} broke: ${(err as Error).message}\n`);
    return USAGE_EXIT;
  }
  io.stderr.write(`rpcscope tap: ${url} ended the stream (the sidecar stopped or drained)\n`);
  return 0;
}
