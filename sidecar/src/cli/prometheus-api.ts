// The few Prometheus HTTP API calls the commands need: instant queries and the
// active targets. Any failure (refused, timed out, an HTTP error, a PromQL
// error) is a PrometheusError carrying one line that says why.

import { ErrorCode, RpcscopeError } from '../core/errors.ts';

export class PrometheusError extends RpcscopeError {
  constructor(message: string) {
    super(ErrorCode.PROMETHEUS_API, message);
    this.name = 'PrometheusError';
  }
}

export interface Sample {
  labels: Record<string, string>;
  value: number;
}

export interface Target {
  labels: Record<string, string>;
  scrapeUrl: string;
  health: string;
}

interface Answer<T> {
  status: 'success' | 'error';
  data?: T;
  error?: string;
  errorType?: string;
}

export class PrometheusApi {
  readonly base: string;

  constructor(url: string, private readonly timeoutMs = 10_000) {
    this.base = url.replace(/\/+$/u, '');
  }

  /** An instant vector at `time` (epoch seconds; now by default); scalars and strings are not asked for. */
  async query(expr: string, time?: number): Promise<Sample[]> {
    const params: Record<string, string> = { query: expr };
    if (time !== undefined) params.time = String(time);
    const data = await this.call<{ resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> }>('/api/v1/query', params);
    if (data.resultType !== 'vector') throw new PrometheusError(`${expr}: expected a vector, got a ${data.resultType}`);
    return data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
  }

  async targets(): Promise<Target[]> {
    const data = await this.call<{ activeTargets: Array<{ labels: Record<string, string>; scrapeUrl: string; health: string }> }>('/api/v1/targets', { state: 'active' });
    return data.activeTargets.map((t) => ({ labels: t.labels, scrapeUrl: t.scrapeUrl, health: t.health }));
  }

  private async call<T>(path: string, params: Record<string, string>): Promise<T> {
    let res: Response;
    try {
      // Queries go as a form (a long PromQL would overflow a URL); the targets list is a plain GET.
      const get = path === '/api/v1/targets';
      res = await fetch(get ? `${this.base}${path}?${new URLSearchParams(params)}` : `${this.base}${path}`, {
        method: get ? 'GET' : 'POST',
        ...(get ? {} : { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString() }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = (err as Error).name === 'TimeoutError' ? `no answer within ${this.timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (err as Error).message);
      throw new PrometheusError(`cannot reach Prometheus at ${this.base}: ${why}`);
    }
    let body: Answer<T>;
    try {
      body = (await res.json()) as Answer<T>;
    } catch {
      throw new PrometheusError(`${this.base}${path} answered HTTP ${res.status} and no Prometheus API JSON: is ${this.base} a Prometheus?`);
    }
    if (body.status !== 'success' || body.data === undefined) {
      throw new PrometheusError(`Prometheus at ${this.base} refused ${params.query ?? path}: ${body.errorType ?? `HTTP ${res.status}`}: ${body.error ?? ''}`);
    }
    return body.data;
  }
}
