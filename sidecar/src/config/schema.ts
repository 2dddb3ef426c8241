// Every setting of the sidecar, in one table: its flag, kind, default and help.
// The same table drives --help, RPCSCOPE_* environment variables, the YAML file's
// keys and validation, so a setting cannot exist in one place and not another.

/** How an outbound call picks its endpoint (--balance; upstream/balancer/picker.ts builds each). */
export const BALANCE_POLICIES = ['round_robin', 'least_request', 'ewma', 'sticky'] as const;
export type BalancePolicy = (typeof BALANCE_POLICIES)[number];

/** How much of the per-method distribution /metrics exports (--metrics-detail; observe/metrics-detail.ts sizes each). */
export const METRICS_DETAILS = ['basic', 'standard', 'full'] as const;
export type MetricsDetail = (typeof METRICS_DETAILS)[number];

export type Kind =
  | { type: 'hostport' }
  | { type: 'url' }
  | { type: 'enum'; values: readonly string[] }
  | { type: 'duration' }
  | { type: 'int'; min: number; max: number }
  | { type: 'bool' }
  | { type: 'ratio' }
  | { type: 'file' }
  | { type: 'dir' }
  | { type: 'string' };

export interface Setting {
  flag: string;
  kind: Kind;
  /** Default as the user would write it; undefined when the setting is optional. */
  default?: string;
  help: string;
  /** The value's placeholder in --help when its kind's name says too little. */
  placeholder?: string;
}

export const SETTINGS = [
  { flag: 'listen', kind: { type: 'hostport' }, default: '0.0.0.0:14001', help: 'address the proxy listens on (HTTP/1.1 and HTTP/2, cleartext or TLS)' },
  { flag: 'upstream', kind: { type: 'url' }, help: 'where calls go: http://host:port or https://host:port (required)' },
  { flag: 'grpc-upstream', kind: { type: 'url' }, help: 'where gRPC, gRPC-Web and Connect calls go instead of --upstream' },
  { flag: 'upstream-protocol', kind: { type: 'enum', values: ['auto', 'http1', 'http2'] }, default: 'auto', help: 'HTTP version toward --upstream (auto: ALPN over TLS, else HTTP/2 tried once per endpoint and HTTP/1.1 if the app does not speak it)' },
  { flag: 'grpc-upstream-protocol', kind: { type: 'enum', values: ['auto', 'http1', 'http2'] }, default: 'auto', help: 'HTTP version toward --grpc-upstream, as --upstream-protocol' },
  { flag: 'admin', kind: { type: 'hostport' }, default: '0.0.0.0:14090', help: 'admin address: /metrics, /healthz, /readyz, /debug/*; 127.0.0.1:PORT keeps it to the pod' },
  { flag: 'mode', kind: { type: 'enum', values: ['inbound', 'outbound'] }, default: 'inbound', help: 'inbound: in front of this pod\'s app; outbound: the app\'s calls to another service' },
  { flag: 'tls-cert', kind: { type: 'file' }, help: 'PEM certificate: serve TLS (ALPN h2 and http/1.1) on --listen' },
  { flag: 'tls-key', kind: { type: 'file' }, help: 'PEM private key for --tls-cert' },
  { flag: 'upstream-ca', kind: { type: 'file' }, help: 'PEM CA bundle to verify an https:// upstream (default: the system CAs)' },
  { flag: 'drain-timeout', kind: { type: 'duration' }, default: '20s', help: 'on SIGTERM, how long calls in flight may take to finish' },
  { flag: 'drain-delay', kind: { type: 'duration' }, default: '0', help: 'on SIGTERM, keep accepting and serving calls this long with /readyz failing, while endpoint removal reaches kube-proxy and clients\' balancers; then GOAWAY and --drain-timeout' },
  { flag: 'connect-timeout', kind: { type: 'duration' }, default: '5s', help: 'how long connecting to the upstream may take' },
  { flag: 'upstream-max-connections', kind: { type: 'int', min: 1, max: 1_000_000 }, default: '1024', help: 'HTTP/1.1 connections open at once to each upstream endpoint; calls past them wait for one to be free' },
  { flag: 'upstream-max-connecting', kind: { type: 'int', min: 1, max: 1_000_000 }, default: '128', help: 'HTTP/1.1 connections being made at once to each upstream endpoint, so a burst of calls does not overflow the app\'s accept queue; calls past them wait for a connection' },
  { flag: 'upstream-max-pending', kind: { type: 'int', min: 0, max: 1_000_000 }, default: '1024', help: 'calls waiting for an HTTP/1.1 upstream connection per endpoint; past it a call is answered UNAVAILABLE (503) and counted in rpcscope_upstream_queue_overflow_total' },
  { flag: 'endpoints', kind: { type: 'string' }, help: 'outbound: static endpoints host:port,host:port (else the DNS records of --upstream\'s host)' },
  { flag: 'resolve-interval', kind: { type: 'duration' }, default: '5s', help: 'outbound: how often the DNS records of --upstream\'s host are asked again' },
  { flag: 'dns-server', kind: { type: 'hostport' }, help: 'outbound: the DNS server to ask (default: the system resolver)' },
  { flag: 'endpoint-series-ttl', kind: { type: 'duration' }, default: '5m', help: 'outbound: how long an endpoint that left (no longer resolved, no connection or call left) keeps its rpcscope_upstream_* series before they are dropped (0: never)' },
  { flag: 'balance', kind: { type: 'enum', values: BALANCE_POLICIES }, default: 'round_robin', help: 'outbound: how each call picks an endpoint (sticky: one per client connection)' },
  { flag: 'max-connections', kind: { type: 'int', min: 0, max: 1_000_000 }, default: '10000', help: 'client connections open at once on --listen; past it a new connection is closed unread and counted in rpcscope_connections_overflow_total (0: no limit)' },
  { flag: 'first-byte-timeout', kind: { type: 'duration' }, default: '10s', help: 'how long a new client connection may take to show its protocol: the TLS handshake, the HTTP/2 preface and SETTINGS, or an HTTP/1.1 request line (0: no limit)' },
  { flag: 'request-headers-timeout', kind: { type: 'duration' }, default: '60s', help: 'how long an HTTP/1.1 request\'s headers may take to arrive once it has begun (0: no limit); bodies and responses are not limited' },
  { flag: 'idle-timeout', kind: { type: 'duration' }, default: '1h', help: 'close a client connection with no call in flight for this long: HTTP/1.1 keep-alive, or HTTP/2 with GOAWAY (0: never)' },
  { flag: 'keepalive-interval', kind: { type: 'duration' }, default: '10s', help: 'HTTP/2 PING a connection that has read nothing this long (client connections; upstream connections in outbound mode), and TCP keepalive on every socket after this idle time (0: off)' },
  { flag: 'keepalive-timeout', kind: { type: 'duration' }, default: '5s', help: 'close a connection whose PING is not answered (nor anything else read) within this long: its calls end UNAVAILABLE (503), an outbound endpoint is ejected' },
  { flag: 'max-connection-age', kind: { type: 'duration' }, default: '0', help: 'GOAWAY a client connection after this age, ±10 % (0: never), so clients reconnect and spread' },
  { flag: 'max-connection-age-grace', kind: { type: 'duration' }, default: '30s', help: 'after that GOAWAY, how long calls in flight may take before the connection is closed' },
  { flag: 'max-methods', kind: { type: 'int', min: 1, max: 10_000 }, default: '100', help: 'method label values per protocol before new ones fold into _OTHER' },
  { flag: 'metrics-detail', kind: { type: 'enum', values: METRICS_DETAILS }, default: 'standard', help: 'how much per-method distribution /metrics exports: basic, standard or full (latency by code, payload size histograms)' },
  { flag: 'histograms', kind: { type: 'enum', values: ['classic', 'native', 'both'] }, default: 'classic', help: 'latency, stream and deadline histograms a protobuf scrape gets: classic buckets, Prometheus native histograms, or both in one message; text scrapes always get classic' },
  { flag: 'trpc-prefix', kind: { type: 'string' }, default: '/trpc', help: 'path prefix of tRPC procedures (GET|POST <prefix>/<procedure>); empty: no call is read as tRPC' },
  { flag: 'routes', kind: { type: 'file' }, help: 'REST route templates: a list (GET /v1/orders/{id}) or an OpenAPI 3 document' },
  { flag: 'operations', kind: { type: 'file' }, help: 'YAML map of logical operations to their REST routes and RPC methods' },
  { flag: 'proto', kind: { type: 'dir' }, help: 'directory of .proto files: stream shapes and google.api.http operations' },
  { flag: 'debug-endpoints', kind: { type: 'bool' }, default: 'true', help: 'serve /debug/* (/debug/connections with client addresses, /debug/tap with every call) on the admin port' },
  { flag: 'admin-token-file', kind: { type: 'file' }, help: '/debug/* answers loopback callers, and others presenting "Authorization: Bearer <the file\'s content>" (mount it from a Secret; read again when it changes)' },
  { flag: 'transcode', kind: { type: 'bool' }, default: 'false', help: 'serve REST JSON callers from the gRPC upstream through the google.api.http rules of --proto' },
  { flag: 'json-names', kind: { type: 'enum', values: ['json', 'proto'] }, default: 'json', help: 'transcoded JSON field names: json (lowerCamelCase or json_name) or proto (as in the .proto file)' },
  { flag: 'grpc-web-bridge', kind: { type: 'bool' }, default: 'false', help: 'translate gRPC-Web calls to gRPC for an upstream that speaks only gRPC' },
  { flag: 'cors-origin', kind: { type: 'string' }, placeholder: 'ORIGIN,…|*', help: 'browser origins whose CORS preflights are answered for translated calls (gRPC-Web bridge, transcoded REST)' },
  { flag: 'split', kind: { type: 'string' }, placeholder: 'OPERATION=PERCENT,…', help: 'that share of the REST calls of an operation (pkg.Service/Method, from the google.api.http rules of --proto) goes to --grpc-upstream through the transcoder, the rest to --upstream; repeatable' },
  { flag: 'shadow', kind: { type: 'url' }, help: 'mirror unary REST and gRPC calls (bodies up to 1 MiB) to this second upstream once answered, compare its answers with the primary\'s and drop them' },
  { flag: 'service-name', kind: { type: 'string' }, default: 'rpcscope', help: 'service.name on target_info' },
  { flag: 'data-plane', kind: { type: 'enum', values: ['relay', 'terminate'] }, default: 'relay', help: 'inbound HTTP/2: relay frames to one upstream connection per client connection, or terminate each call (node:http2)' },
  { flag: 'outbound-data-plane', kind: { type: 'enum', values: ['relay', 'terminate'] }, default: 'relay', help: 'outbound HTTP/2 (--mode outbound, an HTTP/2 service, no translation): relay frames, each call\'s stream mapped onto a pooled connection to the endpoint picked for it, or terminate each call (node:http2)' },
  { flag: 'http1-data-plane', kind: { type: 'enum', values: ['relay', 'terminate'] }, default: 'relay', help: 'inbound HTTP/1.1 (plain http:// upstream, --upstream-protocol auto or http1, no --shadow): relay each client connection to one upstream connection, heads and bodies passed on as bytes (calls to transcode, bridge or split, and an HTTP/2-only app\'s callers, go to the terminating path), or terminate each call (node:http)' },
  { flag: 'enforce-deadlines', kind: { type: 'bool' }, default: 'false', help: 'end calls at their deadline with DEADLINE_EXCEEDED and cancel the upstream' },
  { flag: 'log-level', kind: { type: 'enum', values: ['debug', 'info', 'warn', 'error', 'silent'] }, default: 'info', help: 'log verbosity (JSON lines on stderr)' },
  { flag: 'access-log', kind: { type: 'string' }, placeholder: 'off|stdout|stderr|FILE', default: 'off', help: 'one JSON line per call: off, stdout, stderr or a file path (appended to)' },
  { flag: 'access-log-sample', kind: { type: 'ratio' }, default: '1', help: 'the share of calls the access log writes, from 0 to 1' },
] as const satisfies readonly Setting[];

export type Flag = (typeof SETTINGS)[number]['flag'];

export function envName(flag: string): string {
  return 'RPCSCOPE_' + flag.toUpperCase().replace(/-/g, '_');
}
