// `top`'s figures from Prometheus: the same table over the last --window
// (default 1m) of the scope's series, and per pod the share and skew the
// recording rules compute (from the raw counters, so that the rules need not be
// loaded).
import type { DiagnoseContext } from './diagnose-context.ts';
import { podRows, type TopRow, type TopView } from './top-model.ts';

export class PrometheusSource {
  constructor(private readonly ctx: () => DiagnoseContext, private readonly direction: string | undefined) {}

  async read(): Promise<TopView> {
    const ctx = this.ctx();
    const dir = this.direction === undefined ? '' : `direction=${JSON.stringify(this.direction)}`;
    const by = 'operation, protocol';
    const rate = (metric: string, extra: string, groupBy = by): string => `sum by (${groupBy}) (rate(${metric}${ctx.sel([dir, extra].filter((e) => e !== '').join(','))}${ctx.range()}))`;
    const [calls, ok, p50, p99, active, respBytes, pods] = await Promise.all([
      ctx.query(rate('rpcscope_calls_total', '')),
      ctx.query(rate('rpcscope_calls_total', 'code="OK"')),
      ctx.query(ctx.quantile(0.5, 'rpcscope_call_duration_seconds', dir, by)),
      ctx.query(ctx.quantile(0.99, 'rpcscope_call_duration_seconds', dir, by)),
      // In flight has no operation label: by method, matched to its operation through the calls' labels.
      ctx.query(`sum by (protocol, method) (rpcscope_calls_active${ctx.sel(dir)})`),
      ctx.query(rate('rpcscope_call_bytes_total', 'flow="response"')),
      ctx.query(rate('rpcscope_calls_total', 'direction="inbound"', 'namespace, service, pod')),
    ]);
    const methodOps = await ctx.query(`group by (protocol, method, operation) (rpcscope_calls_total${ctx.sel(dir)})`);
    const opOf = new Map(methodOps.map((s) => [`${s.labels.protocol}\u0000${s.labels.method}`, s.labels.operation ?? '']));
    const k = (l: Record<string, string>): string => `${l.operation ?? ''}\u0000${l.protocol ?? ''}`;
    const rows = new Map<string, TopRow>();
    const row = (key: string): TopRow => {
      let r = rows.get(key);
      if (r === undefined) {
        const [operation, protocol] = key.split('\u0000') as [string, string];
        r = { operation, protocol, rate: 0, success: NaN, p50: NaN, p99: NaN, active: 0, bytesPerCall: NaN };
        rows.set(key, r);
      }
      return r;
    };
    for (const s of calls) row(k(s.labels)).rate = s.value;
    const okBy = new Map(ok.map((s) => [k(s.labels), s.value]));
    const bytesBy = new Map(respBytes.map((s) => [k(s.labels), s.value]));
    for (const [key, r] of rows) {
      r.success = r.rate > 0 ? (okBy.get(key) ?? 0) / r.rate : NaN;
      r.bytesPerCall = r.rate > 0 && bytesBy.has(key) ? bytesBy.get(key)! / r.rate : NaN;
    }
    for (const s of p50) row(k(s.labels)).p50 = s.value;
    for (const s of p99) row(k(s.labels)).p99 = s.value;
    for (const s of active) row(`${opOf.get(`${s.labels.protocol}\u0000${s.labels.method}`) ?? s.labels.method ?? ''}\u0000${s.labels.protocol ?? ''}`).active += s.value;
    // Shares and skew are across the pods of one service: with several in scope, --service picks one.
    const services = new Set(pods.map((s) => `${s.labels.namespace ?? ''}/${s.labels.service ?? ''}`));
    if (services.size > 1) return { rows: [...rows.values()], pods: [], skew: NaN, missing: [`per pod: ${services.size} services in scope, give --service for one's shares and skew`] };
    const podRates = new Map(pods.filter((s) => s.labels.pod !== undefined).map((s) => [s.labels.pod!, s.value]));
    return { rows: [...rows.values()], ...podRows(podRates), missing: [] };
  }
}
