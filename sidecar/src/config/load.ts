// Settings come from flags, then RPCSCOPE_* environment variables, then the YAML
// file named by --config, then the defaults — the first that sets a value wins.
// Everything is validated once here; the result is frozen.
import { readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError, parseValue, type HostPort, type UpstreamUrl, type Value } from './parse-value.ts';
import { SETTINGS, envName, type BalancePolicy, type Flag, type MetricsDetail, type Setting } from './schema.ts';

/**
 * --histograms: `classic` keeps /metrics as it was (text formats only); `native`
 * and `both` serve the protobuf exposition to a scraper that asks for it, with
 * native histograms instead of, or beside, the classic buckets.
 */
export type HistogramFormat = 'classic' | 'native' | 'both';

export interface Config {
  listen: HostPort;
  upstream: UpstreamUrl;
  grpcUpstream: UpstreamUrl | undefined;
  /** The HTTP version spoken to --upstream (and to --grpc-upstream): learned per endpoint, or fixed. */
  upstreamProtocol: UpstreamProtocolMode;
  grpcUpstreamProtocol: UpstreamProtocolMode;
  admin: HostPort;
  mode: 'inbound' | 'outbound';
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  upstreamCa: string | undefined;
  drainTimeoutMs: number;
  drainDelayMs: number;
  connectTimeoutMs: number;
  /** HTTP/1.1 toward each upstream endpoint: connections open at once, being made at once, and calls waiting for one. */
  upstreamMaxConnections: number;
  upstreamMaxConnecting: number;
  upstreamMaxPending: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** Outbound: static endpoints; undefined means DNS discovery of the upstream's host. */
  endpoints: HostPort[] | undefined;
  resolveIntervalMs: number;
  dnsServer: HostPort | undefined;
  balance: BalancePolicy;
  /** Client connections open at once on the proxy port; 0 means no limit. */
  maxConnections: number;
  /** Each of these three: 0 means no limit. */
  firstByteTimeoutMs: number;
  requestHeadersTimeoutMs: number;
  idleTimeoutMs: number;
  endpointSeriesTtlMs: number;
  /** HTTP/2 PING keepalive and TCP keepalive (h2/h2-keepalive.ts); an interval of 0 turns both off. */
  keepaliveIntervalMs: number;
  keepaliveTimeoutMs: number;
  /** 0 means connections are never aged out. */
  maxConnectionAgeMs: number;
  maxConnectionAgeGraceMs: number;
  maxMethods: number;
  /** Path prefix of tRPC procedures, without a trailing `/`; '' reads no call as tRPC. */
  trpcPrefix: string;
  /** How much of the per-method distribution /metrics exports (observe/metrics-detail.ts). */
  metricsDetail: MetricsDetail;
  /** What a protobuf scrape of /metrics gets for the latency, stream and deadline histograms (observe/prometheus-protobuf.ts). */
  histograms: HistogramFormat;
  routesFile: string | undefined;
  operationsFile: string | undefined;
  protoDir: string | undefined;
  /** REST calls matching a google.api.http rule are served by the gRPC upstream. */
  transcode: boolean;
  jsonNames: 'json' | 'proto';
  /** gRPC-Web calls are translated to gRPC toward the upstream. */
  grpcWebBridge: boolean;
  /** Origins answered with CORS on the translated paths; empty for none. */
  corsOrigins: string[];
  /** Operation (`pkg.Service/Method`) -> the percentage of its REST calls transcoded to --grpc-upstream. */
  split: ReadonlyMap<string, number>;
  /** Where calls are mirrored to and compared (--shadow). */
  shadow: UpstreamUrl | undefined;
  serviceName: string;
  enforceDeadlines: boolean;
  debugEndpoints: boolean;
  /** The bearer token callers from outside the pod present for /debug/*; undefined: loopback callers only. */
  adminTokenFile: string | undefined;
  /** How inbound HTTP/2 is carried: relayed frame by frame, or terminated per call. */
  dataPlane: 'relay' | 'terminate';
  /** How inbound HTTP/1.1 is carried: relayed connection to connection, or terminated per call. */
  http1DataPlane: 'relay' | 'terminate';
  /** How outbound HTTP/2 is carried: frames mapped per call onto pooled endpoint connections, or terminated per call. */
  outboundDataPlane: 'relay' | 'terminate';
  /** `off`, `stdout`, `stderr` or the path of a file appended to. */
  accessLog: string;
  /** The share of calls the access log writes, 0 to 1. */
  accessLogSample: number;
}

export type UpstreamProtocolMode = 'auto' | 'http1' | 'http2';

/**
 * What the command line asks for: run, only check the settings and the files
 * they name (`--check`, as `nginx -t`), or print the help or the version.
 */
export type CliResult =
  | { kind: 'run'; config: Config }
  | { kind: 'check'; config: Config; settings: EffectiveSetting[] }
  | { kind: 'help'; text: string }
  | { kind: 'version' };

/** A setting as it was given, and where from: what `--check` shows. */
export interface EffectiveSetting {
  flag: string;
  text: string | undefined;
  from: 'flag' | 'env' | 'file' | 'default' | 'unset';
}

/** Flags that are actions rather than settings: no value, no environment variable, no YAML key. */
const ACTIONS = [
  { flag: 'check', help: 'load and validate the settings, routes, operations and .proto files, print what would run, exit (0, or 2 on an error)' },
  { flag: 'version', help: 'print the version and exit' },
  { flag: 'help', help: 'show this help' },
] as const;
type Action = (typeof ACTIONS)[number]['flag'];

const ALL: readonly Setting[] = SETTINGS;
const BY_FLAG = new Map<string, Setting>(ALL.map((s) => [s.flag, s]));

/** Flags that may be given more than once on the command line: their values are joined as one comma-separated list. */
const REPEATABLE = new Set(['split']);

function isBool(s: Setting): boolean {
  return s.kind.type === 'bool';
}

/**
 * Raw text per flag from argv; `--config` and the actions are returned apart.
 * Hand-parsed rather than with node:util's parseArgs: a boolean flag here also
 * takes `--flag false` and `--flag=false` (as YAML and the environment can say
 * it), which parseArgs rejects, and its errors would have to be re-worded to
 * name the flag, the value and what is allowed.
 */
function readArgs(argv: readonly string[]): { values: Map<string, string>; configFile: string | undefined; actions: Set<Action> } {
  const values = new Map<string, string>();
  let configFile: string | undefined;
  const actions = new Set<Action>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const action = arg === '-h' ? 'help' : ACTIONS.find((a) => arg === `--${a.flag}`)?.flag;
    if (action !== undefined) {
      actions.add(action);
      continue;
    }
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument ${JSON.stringify(arg)}: settings are given as --flag value (see --help)`);
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    const setting = BY_FLAG.get(name);
    if (name !== 'config' && !setting) throw new ConfigError(`unknown flag --${name} (see --help for the flags rpcscope takes)`);
    let text: string;
    if (eq >= 0) text = arg.slice(eq + 1);
    else if (setting && isBool(setting) && (argv[i + 1] === undefined || argv[i + 1]!.startsWith('--'))) text = 'true';
    else {
      const next = argv[i + 1];
      if (next === undefined) throw new ConfigError(`--${name}: missing value`);
      text = next;
      i++;
    }
    if (name === 'config') configFile = text;
    else if (REPEATABLE.has(name) && values.has(name)) values.set(name, `${values.get(name)!},${text}`);
    else values.set(name, text);
  }
  return { values, configFile, actions };
}

function readFile(path: string): Map<string, string> {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ConfigError(`--config: cannot read ${path}: ${(err as Error).message.split('\n')[0]}`);
  }
  const values = new Map<string, string>();
  if (doc === null || doc === undefined) return values;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`--config: ${path} must be a mapping of setting: value`);
  for (const [key, value] of Object.entries(doc)) {
    if (!BY_FLAG.has(key)) throw new ConfigError(`--config: ${path}: unknown setting ${JSON.stringify(key)} (the keys are the flag names, e.g. listen, upstream)`);
    if (value === null || typeof value === 'object') throw new ConfigError(`--config: ${path}: ${key} must be a single value`);
    values.set(key, String(value));
  }
  return values;
}

/** Columns of --help: a terminal's 80 would leave the help column too narrow beside `--balance round_robin|…`. */
const HELP_WIDTH = 110;

/** `text` in lines of at most `width` characters, broken at spaces (a longer word keeps its own line). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  return [...lines, line];
}

export function helpText(): string {
  const rows: [head: string, help: string][] = [['--config FILE', 'YAML file of settings (keys are the flag names)']];
  for (const s of ALL) {
    const value = 'placeholder' in s ? s.placeholder : s.kind.type === 'enum' ? s.kind.values.join('|') : s.kind.type.toUpperCase();
    const arg = s.kind.type === 'bool' ? '' : ` ${value}`;
    const dflt = 'default' in s ? ` (default ${s.default})` : '';
    rows.push([`--${s.flag}${arg}`, `${s.help}${dflt}`], ['', `env ${envName(s.flag)}`]);
  }
  for (const a of ACTIONS) rows.push([`--${a.flag}`, a.help]);
  // The help column starts two spaces after the longest flag and its value, and
  // is wrapped at word boundaries to keep lines within HELP_WIDTH.
  const width = Math.max(...rows.map(([head]) => head.length)) + 2;
  const lines = rows.flatMap(([head, help]) => wrap(help, HELP_WIDTH - 2 - width).map((part, i) => `  ${(i === 0 ? head : '').padEnd(width)}${part}`));
  return [
    'rpcscope — an HTTP/2-aware observability sidecar for gRPC, gRPC-Web, Connect and REST',
    '',
    'usage: rpcscope --upstream URL [flags]',
    'or:    rpcscope diagnose|top|tap [flags]   (each with --help): what is wrong with a fleet, its live calls',
    '',
    'Each flag can also be set as the environment variable shown, or as a key of the',
    'YAML file given by --config. Flags win, then the environment, then the file.',
    '',
    ...lines,
    '',
  ].join('\n');
}

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): CliResult {
  const args = readArgs(argv);
  if (args.actions.has('help')) return { kind: 'help', text: helpText() };
  if (args.actions.has('version')) return { kind: 'version' };
  const configFile = args.configFile ?? env.RPCSCOPE_CONFIG;
  const file = configFile ? readFile(configFile) : new Map<string, string>();
  const values = new Map<Flag, Value | undefined>();
  const settings: EffectiveSetting[] = [];
  for (const s of ALL) {
    const envText = env[envName(s.flag)];
    const given: [string | undefined, EffectiveSetting['from']][] = [
      [args.values.get(s.flag), 'flag'],
      [envText !== '' ? envText : undefined, 'env'],
      [file.get(s.flag), 'file'],
      ['default' in s ? s.default : undefined, 'default'],
    ];
    const [text, from] = given.find(([t]) => t !== undefined) ?? [undefined, 'unset'];
    settings.push({ flag: s.flag, text, from });
    values.set(s.flag as Flag, text === undefined ? undefined : parseValue(s.flag, s.kind, text));
  }
  const config = toConfig(values);
  return args.actions.has('check') ? { kind: 'check', config, settings } : { kind: 'run', config };
}

function toConfig(v: Map<Flag, Value | undefined>): Config {
  const upstream = v.get('upstream') as UpstreamUrl | undefined;
  if (!upstream) throw new ConfigError(`--upstream: missing: give the app's address, e.g. --upstream http://127.0.0.1:8080 (or ${envName('upstream')})`);
  const tlsCert = v.get('tls-cert') as string | undefined;
  const tlsKey = v.get('tls-key') as string | undefined;
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError(tlsCert ? '--tls-key: missing: --tls-cert needs its private key' : '--tls-cert: missing: --tls-key needs its certificate');
  }
  const mode = v.get('mode') as Config['mode'];
  const endpointsText = v.get('endpoints') as string | undefined;
  const endpoints = endpointsText === undefined ? undefined : endpointsText.split(',').map((e) => e.trim()).filter((e) => e !== '').map((e) => parseValue('endpoints', { type: 'hostport' }, e) as HostPort);
  if (endpoints && mode !== 'outbound') throw new ConfigError('--endpoints: only with --mode outbound (an inbound sidecar sends every call to its own app)');
  if (endpoints?.length === 0) throw new ConfigError('--endpoints: empty: give host:port[,host:port...]');
  const accessLog = v.get('access-log') as string;
  if (!['off', 'stdout', 'stderr'].includes(accessLog) && !isDirectory(dirname(accessLog))) {
    throw new ConfigError(`--access-log: invalid value ${JSON.stringify(accessLog)}: expected off, stdout, stderr or a file path in an existing directory`);
  }
  if (v.get('transcode') && v.get('proto') === undefined) throw new ConfigError('--transcode: needs --proto, the directory of .proto files whose google.api.http rules say what to translate');
  const split = parseSplit(v.get('split') as string | undefined);
  if (split.size > 0 && (v.get('proto') === undefined || !v.get('grpc-upstream'))) throw new ConfigError('--split: needs --proto (whose google.api.http rules name the operations) and --grpc-upstream (where the split share goes)');
  if (v.get('grpc-upstream') && mode === 'outbound') throw new ConfigError('--grpc-upstream: only with --mode inbound (outbound calls go to the endpoints of --upstream)');
  return Object.freeze({
    listen: v.get('listen') as HostPort,
    upstream,
    grpcUpstream: v.get('grpc-upstream') as UpstreamUrl | undefined,
    upstreamProtocol: v.get('upstream-protocol') as UpstreamProtocolMode,
    grpcUpstreamProtocol: v.get('grpc-upstream-protocol') as UpstreamProtocolMode,
    admin: v.get('admin') as HostPort,
    mode,
    tlsCert,
    tlsKey,
    upstreamCa: v.get('upstream-ca') as string | undefined,
    drainTimeoutMs: v.get('drain-timeout') as number,
    drainDelayMs: v.get('drain-delay') as number,
    connectTimeoutMs: v.get('connect-timeout') as number,
    upstreamMaxConnections: v.get('upstream-max-connections') as number,
    upstreamMaxConnecting: v.get('upstream-max-connecting') as number,
    upstreamMaxPending: v.get('upstream-max-pending') as number,
    logLevel: v.get('log-level') as Config['logLevel'],
    endpoints,
    resolveIntervalMs: Math.max(100, v.get('resolve-interval') as number),
    dnsServer: v.get('dns-server') as HostPort | undefined,
    balance: v.get('balance') as Config['balance'],
    maxConnections: v.get('max-connections') as number,
    firstByteTimeoutMs: v.get('first-byte-timeout') as number,
    requestHeadersTimeoutMs: v.get('request-headers-timeout') as number,
    idleTimeoutMs: v.get('idle-timeout') as number,
    endpointSeriesTtlMs: v.get('endpoint-series-ttl') as number,
    keepaliveIntervalMs: v.get('keepalive-interval') as number,
    keepaliveTimeoutMs: v.get('keepalive-timeout') as number,
    maxConnectionAgeMs: v.get('max-connection-age') as number,
    maxConnectionAgeGraceMs: v.get('max-connection-age-grace') as number,
    maxMethods: v.get('max-methods') as number,
    trpcPrefix: trpcPrefix(v.get('trpc-prefix') as string),
    metricsDetail: v.get('metrics-detail') as MetricsDetail,
    histograms: v.get('histograms') as HistogramFormat,
    routesFile: v.get('routes') as string | undefined,
    operationsFile: v.get('operations') as string | undefined,
    protoDir: v.get('proto') as string | undefined,
    transcode: v.get('transcode') as boolean,
    jsonNames: v.get('json-names') as Config['jsonNames'],
    grpcWebBridge: v.get('grpc-web-bridge') as boolean,
    corsOrigins: ((v.get('cors-origin') as string | undefined) ?? '').split(',').map((o) => o.trim()).filter((o) => o !== ''),
    split,
    shadow: v.get('shadow') as UpstreamUrl | undefined,
    serviceName: v.get('service-name') as string,
    enforceDeadlines: v.get('enforce-deadlines') as boolean,
    debugEndpoints: v.get('debug-endpoints') as boolean,
    adminTokenFile: v.get('admin-token-file') as string | undefined,
    dataPlane: v.get('data-plane') as Config['dataPlane'],
    http1DataPlane: v.get('http1-data-plane') as Config['http1DataPlane'],
    outboundDataPlane: v.get('outbound-data-plane') as Config['outboundDataPlane'],
    accessLog,
    accessLogSample: v.get('access-log-sample') as number,
  });
}

/** `pkg.Service/Method=30,other.Service/Get=5%` as operation -> percent (0 to 100). */
function parseSplit(text: string | undefined): Map<string, number> {
  const split = new Map<string, number>();
  for (const item of (text ?? '').split(',').map((i) => i.trim()).filter((i) => i !== '')) {
    const eq = item.lastIndexOf('=');
    const operation = eq < 0 ? '' : item.slice(0, eq).trim();
    const percentText = eq < 0 ? '' : item.slice(eq + 1).trim().replace(/%$/u, '');
    const percent = /^\d+(?:\.\d+)?$/u.test(percentText) ? Number(percentText) : NaN;
    if (operation === '' || !(percent >= 0 && percent <= 100)) throw new ConfigError(`--split: invalid value ${JSON.stringify(item)}: expected OPERATION=PERCENT, e.g. shop.v1.Shop/GetItem=30, with a percentage from 0 to 100`);
    if (split.has(operation)) throw new ConfigError(`--split: ${operation} is given twice`);
    split.set(operation, percent);
  }
  return split;
}

function trpcPrefix(value: string): string {
  const prefix = value.replace(/\/+$/, '');
  if (prefix !== '' && (!prefix.startsWith('/') || /[?#\s]/.test(prefix))) throw new ConfigError(`--trpc-prefix: ${JSON.stringify(value)} is not a path: give one such as /trpc, or an empty value for none`);
  return prefix;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
