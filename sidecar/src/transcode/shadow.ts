// --shadow: unary REST and gRPC calls, once the primary has answered, are sent
// again to a second upstream (the new service) whose answer is compared with the
// primary's and dropped. The caller never waits for it: the mirror starts when
// the call has ended, runs on its own timeout, and a slow or dead shadow only
// costs its own counter. Bodies are held as they pass through the call's tap,
// up to MAX_BODY each way; a call with a larger body, a streaming call, or one
// that did not complete is not mirrored.
import http from 'node:http';
import type http2 from 'node:http2';
import type { UpstreamUrl } from '../config/parse-value.ts';
import type { Logger } from '../log.ts';
import type { MetricFamily } from '../observe/metric-cells.ts';
import type { Call } from '../call/call.ts';
import { filterH2Headers } from '../protocol/hop-by-hop.ts';
import { OTHER } from '../route/method-guard.ts';
import { headerText } from '../protocol/header-text.ts';
import { firstDifference, type Answer } from './shadow-compare.ts';
import { ShadowMetrics, type ShadowResult } from './shadow-metrics.ts';
import { nodeHttp2, nodeHttps } from '../builtins.ts';
import { Http2Error } from '../protocol/reset-codes.ts';

/** The largest request or response body held for a mirror. */
const MAX_BODY = 1024 * 1024;
/** How long a mirrored call may take, from its start to its last byte. */
const SHADOW_TIMEOUT_MS = 10_000;
/** Mirrors in flight at once; further calls are not mirrored until some finish, so a stalled shadow holds bounded memory. */
const MAX_IN_FLIGHT = 64;
/** A mismatch is logged at most this often per operation (the first one always). */
const LOG_EVERY_MS = 10_000;

type Headers = http.IncomingHttpHeaders;

function isJson(contentType: string | string[] | number | undefined): boolean {
  const t = (headerText(contentType) ?? '').split(';')[0]!.trim().toLowerCase();
  return t === 'application/json' || t.endsWith('+json');
}

/** Bytes up to a limit; past it, `over` and nothing more is kept. */
class Held {
  chunks: Buffer[] = [];
  size = 0;
  over = false;
  push(chunk: Buffer): void {
    if (this.over) return;
    this.size += chunk.length;
    if (this.size > MAX_BODY) {
      this.over = true;
      this.chunks = [];
      return;
    }
    this.chunks.push(chunk);
  }
  get body(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}

export class Shadow {
  readonly metrics = new ShadowMetrics();
  private readonly agent: http.Agent;
  private session: http2.ClientHttp2Session | undefined;
  private inFlight = 0;
  private readonly lastLogged = new Map<string, number>();

  constructor(
    private readonly target: UpstreamUrl,
    private readonly log: Logger,
    private readonly ca: Buffer | undefined,
  ) {
    this.agent = target.tls ? new (nodeHttps().Agent)({ keepAlive: true, ca }) : new http.Agent({ keepAlive: true });
  }

  /** Hold what passes through `call`'s tap and mirror it once the call has ended. */
  watch(call: Call, method: string, path: string, headers: Headers): void {
    const protocol = call.record.protocol;
    if (protocol !== 'rest' && protocol !== 'grpc') return;
    const request = new Held();
    const response = new Held();
    let responseHeaders: Record<string, unknown> = {};
    // The tap is the one place every forwarder reports the bytes of a call to,
    // whatever the HTTP versions on either side; reading beside it keeps the
    // forwarders unaware of the mirror.
    const tap = call.tap;
    const requestData = tap.requestData.bind(tap);
    const responseHeadersOf = tap.responseHeaders.bind(tap);
    const responseData = tap.responseData.bind(tap);
    const finish = tap.finish.bind(tap);
    tap.requestData = (chunk) => {
      requestData(chunk);
      request.push(chunk);
    };
    tap.responseHeaders = (status, h) => {
      responseHeadersOf(status, h);
      responseHeaders = h;
    };
    tap.responseData = (chunk) => {
      responseData(chunk);
      response.push(chunk);
    };
    tap.finish = () => {
      finish();
      const r = call.record;
      if (r.reset || r.upstreamUnreachable || request.over || response.over || r.httpStatus === 0) return;
      if (protocol === 'grpc' && (r.requestMessages !== 1 || r.responseMessages > 1)) return;
      if (this.inFlight >= MAX_IN_FLIGHT) return;
      const primary: Answer =
        protocol === 'grpc'
          ? { status: r.grpcStatus ?? -1, statusName: 'grpc-status', body: response.body, json: false }
          : { status: r.httpStatus, statusName: 'status', body: response.body, json: isJson(responseHeaders['content-type'] as string | undefined) };
      // The call's own route: the same `operation` as its rpcscope_calls_total, bounded by the same --max-methods.
      const operation = r.route?.operation ?? OTHER;
      this.inFlight++;
      const send = protocol === 'grpc' ? this.sendGrpc(path, headers, request.body) : this.sendRest(method, path, headers, request.body);
      void send.then(
        (answer) => this.compare(operation, primary, answer),
        (err: Error) => {
          this.count(operation, 'error');
          this.sampledLog(operation, 'shadow call failed', { operation, error: err.message });
        },
      ).finally(() => this.inFlight--);
    };
  }

  get families(): readonly MetricFamily[] {
    return this.metrics.families;
  }

  close(): void {
    this.agent.destroy();
    this.session?.close();
  }

  private compare(operation: string, primary: Answer, shadow: Answer): void {
    const d = firstDifference(primary, shadow);
    this.count(operation, d ? 'mismatch' : 'match');
    if (d) this.sampledLog(operation, 'shadow answer differs', { operation, field: d.field, primary: d.primary, shadow: d.shadow });
  }

  private count(operation: string, result: ShadowResult): void {
    this.metrics.count(operation, result);
  }

  private sampledLog(operation: string, msg: string, fields: Record<string, unknown>): void {
    const now = Date.now();
    const last = this.lastLogged.get(operation);
    if (last !== undefined && now - last < LOG_EVERY_MS) return;
    this.lastLogged.set(operation, now);
    this.log.warn(msg, fields);
  }

  private outHeaders(headers: Headers): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    filterH2Headers(headers, out);
    delete out.host;
    delete out['content-length'];
    delete out['transfer-encoding'];
    return out;
  }

  private sendRest(method: string, path: string, headers: Headers, body: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const out = { ...this.outHeaders(headers), host: this.target.authority, ...(body.length > 0 || !['GET', 'HEAD'].includes(method) ? { 'content-length': String(body.length) } : {}) };
      const req = (this.target.tls ? nodeHttps() : http).request({ host: this.target.host, port: this.target.port, method, path, headers: out, agent: this.agent, timeout: SHADOW_TIMEOUT_MS, ca: this.ca }, (res) => {
        const held = new Held();
        res.on('data', (chunk: Buffer) => held.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, statusName: 'status', body: held.body, json: isJson(res.headers['content-type']) }));
        res.on('error', reject);
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${SHADOW_TIMEOUT_MS} ms`)), SHADOW_TIMEOUT_MS).unref();
      req.on('close', () => clearTimeout(timer));
      req.on('timeout', () => req.destroy(new Error(`idle for ${SHADOW_TIMEOUT_MS} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  private grpcSession(): http2.ClientHttp2Session {
    if (this.session && !this.session.closed && !this.session.destroyed) return this.session;
    const session = nodeHttp2().connect(this.target.href, { ca: this.ca });
    session.on('error', () => {});
    session.on('close', () => {
      if (this.session === session) this.session = undefined;
    });
    // A shadow session must not keep the process alive through a drain.
    session.unref();
    this.session = session;
    return session;
  }

  private sendGrpc(path: string, headers: Headers, body: Buffer): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.grpcSession().request({ ...this.outHeaders(headers), ':method': 'POST', ':path': path, te: 'trailers' });
      } catch (err) {
        return reject(err as Error);
      }
      const held = new Held();
      let status: number | undefined;
      const readStatus = (h: http2.IncomingHttpHeaders): void => {
        const s = h['grpc-status'];
        if (s !== undefined) status = Number(s);
      };
      stream.setTimeout(SHADOW_TIMEOUT_MS, () => stream.close(Http2Error.CANCEL));
      stream.on('response', readStatus);
      stream.on('trailers', readStatus);
      stream.on('data', (chunk: Buffer) => held.push(chunk));
      stream.on('error', reject);
      stream.on('close', () => {
        if (status === undefined) reject(new Error(stream.rstCode ? `stream reset (${stream.rstCode})` : 'no grpc-status'));
        else resolve({ status, statusName: 'grpc-status', body: held.body, json: false });
      });
      stream.end(body);
    });
  }
}
