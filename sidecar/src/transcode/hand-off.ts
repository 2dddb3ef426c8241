// Where a call leaves the plain proxy for a translating path: a REST call that
// matches a google.api.http binding (--transcode), a gRPC-Web call when the
// bridge is on (--grpc-web-bridge), and a CORS preflight for either. Built
// once at start; `undefined` when none is on, so the plain path asks nothing.
import type http from 'node:http';
import type http2 from 'node:http2';
import type { Config } from '../config/load.ts';
import { ConfigError } from '../config/parse-value.ts';
import type { Inbound } from '../proxy/inbound.ts';
import type { ProxyContext } from '../proxy/context.ts';
import { h1Caller, h2Caller, type Caller } from './caller.ts';
import { transcodeRest } from './rest-transcoder.ts';
import { loadTranscodeTable, type TranscodeTable } from './transcode-table.ts';
import { TranscodeMetrics } from './transcode-metrics.ts';

export class Translating {
  readonly metrics = new TranscodeMetrics();

  constructor(private readonly table: TranscodeTable | undefined) {}

  /** True when the call is taken: the caller is answered from here. */
  h1(ctx: ProxyContext, arrived: Inbound, req: http.IncomingMessage, res: http.ServerResponse): boolean {
    return this.take(ctx, arrived, () => h1Caller(req, res));
  }

  h2(ctx: ProxyContext, arrived: Inbound, stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): boolean {
    return this.take(ctx, arrived, () => h2Caller(stream, headers));
  }

  private take(ctx: ProxyContext, arrived: Inbound, caller: () => Caller): boolean {
    const { call, detected, method, path } = arrived;
    if (detected.protocol === 'rest' && this.table) {
      const q = path.indexOf('?');
      const matched = this.table.match(method, q < 0 ? path : path.slice(0, q));
      if (!matched) return false;
      transcodeRest({ ctx, table: this.table, metrics: this.metrics, extraHeaders: {} }, call, caller(), matched, q < 0 ? '' : path.slice(q + 1));
      return true;
    }
    return false;
  }
}

/** What translating the settings ask for; undefined when they ask for none. Throws an Error naming the file and rule on a bad binding. */
export function createTranslating(config: Config): Translating | undefined {
  if (!config.transcode) return undefined;
  try {
    return new Translating(loadTranscodeTable(config.protoDir!, config.jsonNames));
  } catch (err) {
    throw new ConfigError(`--proto: ${(err as Error).message.split('\n')[0]}`);
  }
}
