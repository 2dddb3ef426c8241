// rpcscope_shadow_calls_total{operation,result}: how the mirrored calls' answers
// compared with the primary's. Cells bound once per label set and rendered on a
// scrape, as in transcode-metrics.ts.
import { ValueFamily, type MetricFamily, type ValueCell } from '../observe/metric-cells.ts';

export type ShadowResult = 'match' | 'mismatch' | 'error';

export class ShadowMetrics {
  private readonly calls = new ValueFamily('rpcscope_shadow_calls_total', 'Calls mirrored to --shadow, by operation and how its answer compared with the primary\'s (match, mismatch, error)', 'counter');
  private readonly cells = new Map<string, ValueCell>();

  count(operation: string, result: ShadowResult): void {
    const key = `${operation}\0${result}`;
    let c = this.cells.get(key);
    if (!c) this.cells.set(key, (c = this.calls.cell({ operation, result })));
    c.value++;
  }

  /** Served on /metrics and pushed over OTLP with the call metrics. */
  get families(): readonly MetricFamily[] {
    return [this.calls];
  }
}
