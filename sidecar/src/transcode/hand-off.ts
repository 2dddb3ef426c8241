// Where a call leaves the plain proxy for a translating path: a REST call that
// matches a google.api.http binding (--transcode, or its share of --split), a gRPC-Web call when the
// bridge is on (--grpc-web-bridge), and a CORS preflight for either
// (--cors-origin); and where a plain call is watched for the mirror (--shadow). Built once at start; `undefined` when none is on, so the
// plain path asks nothing.
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Config } from '../config/load.ts';
import type { Logger } from '../log.ts';
import { ConfigError } from '../config/parse-value.ts';
import type { Inbound } from '../call/inbound.ts';
import type { ProxyContext, Translating as TranslatingStage } from '../upstream/context.ts';
import { h1Caller, h2Caller, type Caller } from './caller.ts';
import { Cors } from './cors.ts';
import { bridgeGrpcWeb } from './grpc-web-bridge.ts';
import { transcodeRest } from './rest-transcoder.ts';
import { Shadow } from './shadow.ts';
import { RehearsalSplit } from './rehearsal-split.ts';
import type { TranscodeTable } from '../route/transcode-table.ts';
import { TranscodeMetrics } from './transcode-metrics.ts';
import type { Protocol } from '../protocol/vocabulary.ts';

export class Translating implements TranslatingStage {
  readonly metrics = new TranscodeMetrics();

  constructor(
    private readonly table: TranscodeTable | undefined,
    private readonly grpcWeb: boolean,
    private readonly cors: Cors,
    /** REST calls of the operations it names are transcoded by share; the others when --transcode is on. */
    private readonly split: RehearsalSplit | undefined,
    private readonly transcodeAll: boolean,
    /** Mirrors the calls left to the plain proxy (--shadow). */
    readonly shadow: Shadow | undefined,
  ) {}

  /** True when the call is taken: the caller is answered from here. */
  h1(ctx: ProxyContext, arrived: Inbound, req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (this.take(ctx, arrived, () => h1Caller(req, res))) return true;
    this.shadow?.watch(arrived.call, arrived.method, arrived.path, req.headers);
    return false;
  }

  h2(ctx: ProxyContext, arrived: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): boolean {
    if (this.take(ctx, arrived, () => h2Caller(stream, headers))) return true;
    this.shadow?.watch(arrived.call, arrived.method, arrived.path, headers as http.IncomingHttpHeaders);
    return false;
  }

  wouldTake(protocol: Protocol, method: string, path: string): boolean {
    if (protocol === 'grpc_web') return this.grpcWeb;
    if (protocol !== 'rest') return false;
    if (method === 'OPTIONS') return this.cors.configured;
    if (!this.table) return false;
    const q = path.indexOf('?');
    const matched = this.table.match(method, q < 0 ? path : path.slice(0, q));
    if (!matched) return false;
    return this.split?.names(matched.binding.rpc) === true || this.transcodeAll;
  }

  private take(ctx: ProxyContext, arrived: Inbound, makeCaller: () => Caller): boolean {
    const { call, detected, method, path } = arrived;
    if (detected.protocol === 'grpc_web' && this.grpcWeb) {
      const caller = makeCaller();
      const extra = this.cors.responseHeaders(this.cors.allowed(caller.headers.origin));
      bridgeGrpcWeb(ctx, this.metrics, call, caller, path, arrived.contentType ?? 'application/grpc-web+proto', detected.base64, extra);
      return true;
    }
    if (detected.protocol !== 'rest') return false;
    if (method === 'OPTIONS') return this.preflight(arrived, makeCaller);
    if (!this.table) return false;
    const q = path.indexOf('?');
    const matched = this.table.match(method, q < 0 ? path : path.slice(0, q));
    if (!matched) return false;
    if (!(this.split?.transcodes(matched.binding.rpc) ?? this.transcodeAll)) return false;
    const caller = makeCaller();
    const extraHeaders = this.cors.responseHeaders(this.cors.allowed(caller.headers.origin));
    transcodeRest({ ctx, table: this.table, metrics: this.metrics, extraHeaders }, call, caller, matched, q < 0 ? '' : path.slice(q + 1));
    return true;
  }

  private preflight(arrived: Inbound, makeCaller: () => Caller): boolean {
    const caller = makeCaller();
    const answer = this.cors.preflight('OPTIONS', caller);
    if (!answer) return false;
    const { call } = arrived;
    caller.onDone((finished, code) => call.end(finished ? undefined : { side: 'client', code: code ?? -1 }));
    call.tap.responseHeaders(answer.status, answer.headers);
    caller.respond(answer.status, answer.headers);
    caller.end();
    return true;
  }
}

/** The settings the translating paths are built from. */
export type TranslatingSettings = Pick<Config, 'transcode' | 'grpcWebBridge' | 'split' | 'shadow' | 'protoDir' | 'corsOrigins'>;

/**
 * What translating the settings ask for; undefined when they ask for none.
 * `table`: the google.api.http bindings read at start (config/start-files.ts)
 * with --transcode or --split; `upstreamCa`: the --upstream-ca bundle, read
 * once at start, for the mirror's upstream.
 */
export function createTranslating(config: TranslatingSettings, log: Logger, upstreamCa: Buffer | undefined, table: TranscodeTable | undefined): Translating | undefined {
  const splitting = config.split.size > 0;
  if (!config.transcode && !config.grpcWebBridge && !splitting && !config.shadow) return undefined;
  const split = splitting ? new RehearsalSplit(config.split) : undefined;
  if (split && table) {
    const bound = new Set(table.bindings.map((b) => b.rpc));
    for (const operation of split.operations) {
      if (!bound.has(operation)) throw new ConfigError(`--split: ${operation} is no method with a google.api.http rule in ${config.protoDir!} (give it as pkg.Service/Method; bound: ${[...bound].sort().join(', ') || 'none'})`);
    }
  }
  const shadow = config.shadow ? new Shadow(config.shadow, log, upstreamCa) : undefined;
  return new Translating(table, config.grpcWebBridge, new Cors(config.corsOrigins), split, config.transcode, shadow);
}
