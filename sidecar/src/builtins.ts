// Node's HTTP/2 and TLS modules, loaded the first time a connection needs them
// rather than at start. A sidecar's idle memory is paid in every pod, and on
// Node 24 loading node:http2 alone holds about 8.7 MiB more resident memory
// (it loads TLS and OpenSSL's tables with it; node:tls alone about 5 MiB):
// measured with test/bench/startup.ts. With the frame relay as the inbound
// HTTP/2 data plane, a cleartext sidecar in front of an HTTP/2 app never loads
// either: they come in with the terminating path, a TLS listener or upstream,
// the relay's retry of a refused call, or transcoding.
//
// Modules import the types only (`import type http2 from 'node:http2'`) and
// call these for values. process.getBuiltinModule is public (Node 20.16, 22.3)
// and works the same from the TypeScript sources and from the CommonJS bundle.
import type Http2 from 'node:http2';
import type Https from 'node:https';
import type Tls from 'node:tls';

// Each is looked up once and kept: callers on a call's path (an https:// upstream's
// request) pay a field read.
let http2: typeof Http2 | undefined;
let tls: typeof Tls | undefined;
let https: typeof Https | undefined;

export const nodeHttp2 = (): typeof Http2 => (http2 ??= process.getBuiltinModule('node:http2'));
export const nodeTls = (): typeof Tls => (tls ??= process.getBuiltinModule('node:tls'));
export const nodeHttps = (): typeof Https => (https ??= process.getBuiltinModule('node:https'));
